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
	std::optional<int> err;	// nullopt: killed at the bound
	int64_t latency_ns = 0;
};

// "offline" written by a child process, which is killed at the bound: the
// kernel's offlining loop stops only for a fatal signal.
child_answer offline_in_child(const fs::path &state, std::chrono::milliseconds bound)
{
	const auto t0 = clock::now();
	pid_t pid = fork();
	if (pid < 0)
		throw last_sys_error("fork");
	if (pid == 0)
		_exit(write_sysfs(state, "offline"));
	child_answer a;
	int status = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (clock::now() - t0 >= bound) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			a.latency_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
			return a;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	a.latency_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
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

std::optional<memory_block> block_of(uint64_t pfn)
{
	try {
		const uint64_t bytes = std::stoull(read_text_file(memory_sysfs / "block_size_bytes"), nullptr, 16);
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

give_back_attempt offline_block_of(uint64_t pfn, std::chrono::milliseconds bound)
{
	give_back_attempt g;
	const auto block = block_of(pfn);
	g.method = block ? "offline memory block " + std::to_string(block->index) + " (" + block->dir.string() +
				   ", PFN " + hex(pfn) + ")"
			 : "offline the memory block";
	if (auto why = give_back_obstacle(pfn)) {
		g.detail = *why;
		return g;
	}
	const child_answer a = offline_in_child(block->dir / "state", bound);
	g.latency_ns = a.latency_ns;
	if (!a.err) {
		g.given_back = false;
		g.detail = "still offlining after " + std::to_string(bound.count()) +
			   " ms (offline_pages() loops on a page it cannot migrate); stopped with SIGKILL";
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

} // namespace

std::optional<std::string> give_back_obstacle(uint64_t pfn)
{
	const auto block = block_of(pfn);
	if (!block)
		return "no " + (memory_sysfs / "block_size_bytes").string() + " (a kernel without MEMORY_HOTPLUG)";
	std::string state;
	try {
		state = trimmed(read_text_file(block->dir / "state"));
	} catch (const std::exception &e) {
		return e.what();
	}
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

give_back_attempt give_back_memory(uint64_t pfn, const std::string &placement, std::chrono::milliseconds bound)
{
	if (placement == "movable")
		return offline_block_of(pfn, bound);
	give_back_attempt g;
	g.method = "none";
	g.detail = placement == "cma" ? "no give-back oracle for CMA yet (a CMA allocation over the area)"
				      : "the page is in " + placement + " memory: nothing to give back";
	return g;
}

} // namespace pinmatrix
