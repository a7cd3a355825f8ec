// SPDX-License-Identifier: GPL-2.0
#include "give_back.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "kernel_info.hpp"
#include "mapping.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

const fs::path memory_sysfs = "/sys/devices/system/memory";
// A whole CMA area is more to move than one memory block.
constexpr int cma_bound_factor = 3;

// Writes text to a sysfs file: 0 or the errno.
int write_sysfs(const fs::path &file, const std::string &text)
{
	unique_fd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
	if (!fd)
		return errno;
	if (::write(fd.get(), text.data(), text.size()) < 0)
		return errno;
	return 0;
}

struct child_answer {
	std::optional<int> err;	// nullopt: killed (at the bound, or at the proof)
	int64_t latency_ns = 0;
	std::optional<uint64_t> failed_migrations;	// pgmigrate_fail's rise meanwhile; nullopt: not counted
	std::optional<std::string> alive_after_kill;	// where it was exit_after_kill after SIGKILL
};

// What a detail adds for a child that outlived its SIGKILL.
std::string left_running(const child_answer &a)
{
	if (!a.alive_after_kill)
		return "";
	return "; still running " + std::to_string(exit_after_kill.count() / 1000) + " s after SIGKILL (" +
	       *a.alive_after_kill + "): the kernel did not stop for a fatal signal, the child is left running";
}

// /proc/vmstat's migration counters; each nullopt on a kernel without
// VM_EVENT_COUNTERS.
struct migrations {
	std::optional<uint64_t> failed, succeeded;
};

migrations migration_counts()
{
	const auto counters = read_vmstat();
	auto counter = [&](const char *name) {
		const auto it = counters.find(name);
		return it == counters.end() ? std::nullopt : std::optional<uint64_t>(it->second);
	};
	return {counter("pgmigrate_fail"), counter("pgmigrate_success")};
}

// text written to file by a child process, which is killed once the
// kernel has moved no page for the bound (pgmigrate_success, where the
// kernel counts it; else at the bound), at most progress_cap_factor bounds
// in all, or, where a refusal is expected, once the pages failed to migrate
// failed_migrations_proof times: the kernel's offlining loop stops only
// for a fatal signal. A block still moving its pages is slow, not stuck (a
// busy TCG guest took 11.9 s for one). The failed migrations are counted
// in any case.
child_answer write_in_child(const fs::path &file, const std::string &text, give_back_patience patience)
{
	const auto t0 = clock::now();
	const migrations before = migration_counts();
	pid_t pid = fork();
	if (pid < 0)
		throw last_sys_error("fork");
	if (pid == 0) {
		// The case's result pipe stays with the case: a writer stuck in
		// the kernel past its SIGKILL must not hold it open.
		close_range(3, ~0U, 0);
		_exit(write_sysfs(file, text));
	}
	child_answer a;
	int status = 0;
	auto since = [&] { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count(); };
	auto last_progress = t0;
	std::optional<uint64_t> moved = before.succeeded;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		const migrations now = migration_counts();
		if (before.failed && now.failed)
			a.failed_migrations = *now.failed - *before.failed;
		if (moved && now.succeeded && *now.succeeded != *moved) {
			moved = now.succeeded;
			last_progress = clock::now();
		}
		const auto t = clock::now();
		if (stop_attempt_now(patience, t - t0, t - last_progress, a.failed_migrations)) {
			kill(pid, SIGKILL);
			a.alive_after_kill = reap_within(pid, status, exit_after_kill);
			a.latency_ns = since();
			return a;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	a.latency_ns = since();
	a.err = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
	return a;
}

// A block that went offline goes back as it was: ZONE_MOVABLE memory.
std::string put_back_online(const fs::path &state)
{
	for (const char *how : {"online_movable", "online"})
		if (!write_sysfs(state, how))
			return std::string("put back (") + how + ")";
	return "NOT put back online: " + errno_name(errno) + " (this boot has less memory now)";
}

// The memory block holding a PFN.
struct memory_block {
	uint64_t index = 0, first_pfn = 0, pages = 0;
	fs::path dir;
};

// The memory block size of this boot, read once: a page search asks for
// the block of every page it faults in (memory_can_go_back), and reading
// sysfs for each took 2-3 s of an 80 MiB search under TCG.
uint64_t block_size_bytes()
{
	static const uint64_t bytes = std::stoull(read_text_file(memory_sysfs / "block_size_bytes"), nullptr, 16);
	return bytes;
}

std::optional<memory_block> block_of(uint64_t pfn)
{
	try {
		const uint64_t bytes = block_size_bytes();
		memory_block b;
		b.pages = bytes / page_size();
		b.index = pfn / b.pages;
		b.first_pfn = b.index * b.pages;
		b.dir = memory_sysfs / ("memory" + std::to_string(b.index));
		return b;
	} catch (const std::exception &) {
		return std::nullopt;
	}
}

// PG_reserved pages in the block, from /proc/kpageflags (KPF_RESERVED);
// nullopt when it cannot be read.
std::optional<uint64_t> reserved_pages(const memory_block &b)
{
	constexpr uint64_t kpf_reserved = uint64_t(1) << 32;
	unique_fd fd(::open("/proc/kpageflags", O_RDONLY | O_CLOEXEC));
	if (!fd)
		return std::nullopt;
	std::vector<uint64_t> flags(b.pages);
	const size_t want = flags.size() * sizeof(uint64_t);
	if (::pread(fd.get(), flags.data(), want, off_t(b.first_pfn * sizeof(uint64_t))) != ssize_t(want))
		return std::nullopt;
	uint64_t n = 0;
	for (uint64_t f : flags)
		n += (f & kpf_reserved) != 0;
	return n;
}

give_back_attempt offline_block_of(uint64_t pfn, give_back_patience patience)
{
	give_back_attempt g;
	const auto block = block_of(pfn);
	if (!block) {
		// Nothing in user space asks ZONE_MOVABLE back here: no oracle.
		g.method = "none";
		g.detail = *give_back_obstacle(pfn);
		return g;
	}
	g.method = "offline memory block " + std::to_string(block->index) + " (" + block->dir.string() + ", PFN " +
		   hex(pfn) + ")";
	if (auto why = give_back_obstacle(pfn)) {
		g.detail = *why;
		return g;
	}
	const child_answer a = write_in_child(block->dir / "state", "offline", patience);
	g.latency_ns = a.latency_ns;
	if (!a.err) {
		answer_unfinished_offline(g, a.failed_migrations, patience);
		g.detail += left_running(a);
	} else if (*a.err == 0) {
		g.given_back = true;
		g.detail = "offline; " + put_back_online(block->dir / "state");
	} else if (*a.err == EAGAIN || *a.err == ENOMEM) {
		g.given_back = false;
		g.detail = "refused: " + errno_name(*a.err);
	} else if (*a.err == EBUSY) {
		g.detail = "isolation refused (EBUSY): an unmovable page in the block, which a pinned page in "
			   "ZONE_MOVABLE is not (it fails later, at migration)";
	} else {
		g.detail = "could not ask: " + errno_name(*a.err);
	}
	return g;
}

// CMA through debugfs (CMA_DEBUGFS): cma/<area>/alloc takes a count of
// pages and allocates them with cma_alloc(), first fit from the area's
// start; `free` gives them back. The whole area is asked for, so every page
// in it must move.
struct debugfs_area {
	fs::path dir;
	uint64_t base_pfn = 0, count = 0, used = 0;
};

std::optional<debugfs_area> debugfs_area_holding(uint64_t pfn)
{
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/sys/kernel/debug/cma", ec)) {
		const auto base = read_number_file(e.path() / "base_pfn");
		const auto count = read_number_file(e.path() / "count");
		if (base && count && pfn >= *base && pfn < *base + *count && fs::exists(e.path() / "alloc"))
			return debugfs_area{e.path(), *base, *count, read_number_file(e.path() / "used").value_or(0)};
	}
	return std::nullopt;
}

give_back_attempt whole_area_via_debugfs(const debugfs_area &a, std::chrono::milliseconds bound)
{
	give_back_attempt g;
	g.method = "allocate all " + std::to_string(a.count) + " pages of CMA area " + a.dir.filename().string() +
		   " (" + (a.dir / "alloc").string() + ")";
	if (a.used) {
		g.detail = std::to_string(a.used) + " pages of the area are handed out already: a whole-area "
			   "allocation cannot say what refused it";
		return g;
	}
	const child_answer c = write_in_child(a.dir / "alloc", std::to_string(a.count), {bound, false});
	g.latency_ns = c.latency_ns;
	const auto used = read_number_file(a.dir / "used").value_or(0);
	g.given_back = used >= a.count;
	if (*g.given_back)
		g.detail = "allocated; " + std::string(write_sysfs(a.dir / "free", std::to_string(a.count))
							   ? "NOT freed again (the area stays allocated)"
							   : "freed again");
	else
		g.detail = !c.err ? "still allocating after " + std::to_string(bound.count()) +
					    " ms; stopped with SIGKILL" + left_running(c)
				  : "refused: " + errno_name(*c.err);
	return g;
}

// CMA through hugetlb (the area hugetlb_cma= reserves, CMA_SYSFS): as many
// gigantic pages as the area holds, asked of nr_hugepages; what came from
// the area is what its alloc_pages_success counter says (hugetlb falls back
// to memory outside CMA when the area refuses). Then nr_hugepages goes back.
struct hugetlb_area {
	fs::path sysfs;		// /sys/kernel/mm/cma/hugetlbN
	uint64_t total_pages = 0;
};

std::optional<hugetlb_area> only_hugetlb_area()
{
	std::vector<fs::path> areas;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/sys/kernel/mm/cma", ec))
		areas.push_back(e.path());
	if (areas.size() != 1 || areas[0].filename().string().rfind("hugetlb", 0) != 0)
		return std::nullopt;
	const auto total = read_number_file(areas[0] / "total_pages");
	if (!total)
		return std::nullopt;
	return hugetlb_area{areas[0], *total};
}

const fs::path gigantic_pages = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";

give_back_attempt whole_area_via_hugetlb(const hugetlb_area &a, std::chrono::milliseconds bound)
{
	give_back_attempt g;
	const uint64_t per_page = (uint64_t(1) << 30) / page_size();
	const uint64_t wanted = a.total_pages / per_page;
	g.method = "allocate " + std::to_string(wanted) + " 1 GiB hugetlb pages (" + gigantic_pages.string() +
		   ") from CMA area " + a.sysfs.filename().string();
	const auto before = read_number_file(gigantic_pages);
	const auto success = read_number_file(a.sysfs / "alloc_pages_success");
	if (!before || !success || !wanted) {
		g.detail = "no 1 GiB hugetlb pages or no alloc_pages_success on this kernel";
		return g;
	}
	const child_answer c = write_in_child(gigantic_pages, std::to_string(*before + wanted), {bound, false});
	g.latency_ns = c.latency_ns;
	const uint64_t got = (read_number_file(a.sysfs / "alloc_pages_success").value_or(*success) - *success) / per_page;
	g.given_back = got >= wanted;
	g.detail = std::to_string(got) + " of " + std::to_string(wanted) + " from the area" +
		   (!c.err ? " (still allocating after " + std::to_string(bound.count()) + " ms; stopped with SIGKILL" +
				     left_running(c) + ")"
			   : "") +
		   "; " + (write_sysfs(gigantic_pages, std::to_string(*before)) ? "nr_hugepages NOT put back"
										 : "released again");
	return g;
}

give_back_attempt give_back_cma(uint64_t pfn, std::chrono::milliseconds bound)
{
	if (const auto a = debugfs_area_holding(pfn))
		return whole_area_via_debugfs(*a, bound);
	if (const auto h = only_hugetlb_area())
		return whole_area_via_hugetlb(*h, bound);
	give_back_attempt g;
	g.method = "none";
	g.detail = "nothing in user space asks this CMA area back on this kernel: no CMA_DEBUGFS "
		   "(cma/<area>/alloc), and not the one hugetlb_cma area (CMA_SYSFS) of its boot";
	return g;
}

} // namespace

bool stop_attempt_now(give_back_patience patience, std::chrono::nanoseconds since_start,
		      std::chrono::nanoseconds since_progress, std::optional<uint64_t> failed_migrations)
{
	if (patience.refusal_expected && failed_migrations.value_or(0) >= failed_migrations_proof)
		return true;
	return since_progress >= patience.bound || since_start >= patience.bound * progress_cap_factor;
}

void answer_unfinished_offline(give_back_attempt &g, std::optional<uint64_t> failed_migrations,
			       give_back_patience patience)
{
	const std::string ms = std::to_string(g.latency_ns / 1000000) + " ms";
	const std::string counted = " (/proc/vmstat pgmigrate_fail; offline_pages() retries a page it cannot "
				    "migrate until a fatal signal); stopped with SIGKILL";
	if (!failed_migrations) {
		g.detail = "still offlining after " + ms + ", and this kernel counts no failed migrations "
			   "(no pgmigrate_fail in /proc/vmstat: VM_EVENT_COUNTERS) to tell a refusal from a slow "
			   "block; stopped with SIGKILL";
	} else if (*failed_migrations >= failed_migrations_proof) {
		g.given_back = false;
		g.detail = "refused: " + std::to_string(*failed_migrations) + " failed migrations in " + ms + counted;
	} else {
		g.detail = "still offlining after " + ms + " with " + std::to_string(*failed_migrations) +
			   " failed migrations, fewer than the " + std::to_string(failed_migrations_proof) +
			   " that prove a refusal: slow, not refused (the block's pages wait for room under "
			   "memory pressure, or for the CPU; bound " +
			   std::to_string(patience.bound.count()) + " ms)" + counted;
	}
}

std::optional<std::string> give_back_obstacle(uint64_t pfn)
{
	const auto block = block_of(pfn);
	if (!block)
		return "no " + (memory_sysfs / "block_size_bytes").string() + " (a kernel without MEMORY_HOTPLUG)";
	const std::string state = trimmed(read_text_file(block->dir / "state"));
	if (state.empty())
		return "no " + (block->dir / "state").string();
	if (state != "online")
		return "memory block " + std::to_string(block->index) + " is " + state + ", not online";
	// Unreadable: nothing known in the way (the attempt itself then tells).
	if (const auto reserved = reserved_pages(*block); reserved && *reserved)
		return "memory block " + std::to_string(block->index) + " holds " + std::to_string(*reserved) +
		       " PG_reserved pages (boot-time allocations): the kernel refuses to offline it whatever the pins";
	return std::nullopt;
}

bool memory_can_go_back(uint64_t pfn)
{
	// Asked for every page a search faults in: once per block.
	static std::map<uint64_t, bool> by_block;
	const auto block = block_of(pfn);
	if (!block)
		return true;
	const auto [it, added] = by_block.try_emplace(block->index, false);
	if (added)
		it->second = !give_back_obstacle(pfn);
	return it->second;
}

give_back_attempt give_back_memory(uint64_t pfn, const std::string &placement, give_back_patience patience)
{
	if (placement == "movable")
		return offline_block_of(pfn, patience);
	if (placement == "cma")
		return give_back_cma(pfn, patience.bound * cma_bound_factor);
	give_back_attempt g;
	g.method = "none";
	g.detail = "the page is in " + placement + " memory: nothing to give back";
	return g;
}

} // namespace pinmatrix
