// SPDX-License-Identifier: GPL-2.0
// The placement probe's scan rate (PINMATRIX_IOC_PROBE) and the rate at
// which memory is faulted in: the two costs of finding a page in a
// placement and of the runner's placement fill (press_towards()).

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "bench_env.hpp"
#include "sys_error.hpp"

namespace pinmatrix::bench {

namespace {

// An address range reserved but never touched: every page absent.
struct reserved_range {
	void *base = MAP_FAILED;
	size_t length = 0;
	explicit reserved_range(size_t len) : length(len)
	{
		base = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED)
			throw last_sys_error("mmap " + size_label(len));
	}
	~reserved_range()
	{
		if (base != MAP_FAILED)
			munmap(base, length);
	}
};

void set_rate(benchmark::State &state, int64_t total_ns, size_t pages)
{
	if (total_ns > 0)
		state.counters["pages_per_s"] = double(pages) * double(state.iterations()) / (double(total_ns) * 1e-9);
	state.counters["pages"] = double(pages);
}

// probe/unpopulated/<bytes>: one probe over a range with no page in it (the
// scan a search does past what it has faulted in): pin_module's, which
// reads /proc/self/pagemap once and calls PINMATRIX_IOC_PROBE for present
// runs only. The result buffer is allocated and faulted in once, outside
// the timed region. probe/populated/<bytes>: the same over populated 4 KiB
// pages, one PROBE call.
void bm_probe(benchmark::State &state, bool populated)
{
	env &e = env::get();
	if (!e.module()) {
		state.SkipWithError(("no test module: " + e.module_why()).c_str());
		return;
	}
	const size_t bytes = size_t(state.range(0));
	const size_t n = bytes / page_size();
	if (populated) {
		if (auto why = fits(e.restricted(), bytes, false); !why.empty()) {
			state.SkipWithError(why.c_str());
			return;
		}
	}
	std::optional<reserved_range> reserved;
	mapping pages;
	uintptr_t addr = 0;
	if (populated) {
		pages = populated_pages(bytes);
		addr = pages.addr();
	} else {
		reserved.emplace(bytes);
		addr = reinterpret_cast<uintptr_t>(reserved->base);
	}
	std::vector<pinmatrix_page> out(n);
	std::memset(out.data(), 0xff, n * sizeof(out[0]));
	int64_t total_ns = 0;
	for (auto _ : state) {
		const int64_t t0 = time_ns();
		const int rc = e.module()->try_probe_into(addr, n, out.data());
		const int64_t t1 = time_ns();
		if (rc) {
			state.SkipWithError(("PINMATRIX_IOC_PROBE: " + std::string(std::strerror(-rc))).c_str());
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		total_ns += t1 - t0;
	}
	size_t present = 0;
	for (const auto &p : out)
		present += (p.flags & PINMATRIX_PAGE_PRESENT) != 0;
	set_rate(state, total_ns, n);
	state.counters["present"] = double(present) / double(n);
}

// probe/suite_path/<bytes>: pin_module::probe() as the page finder calls
// it (it allocates the result vector each call) over the unpopulated range.
void bm_probe_suite_path(benchmark::State &state)
{
	env &e = env::get();
	if (!e.module()) {
		state.SkipWithError(("no test module: " + e.module_why()).c_str());
		return;
	}
	const size_t bytes = size_t(state.range(0));
	const size_t n = bytes / page_size();
	reserved_range reserved(bytes);
	int64_t total_ns = 0;
	for (auto _ : state) {
		const int64_t t0 = time_ns();
		auto out = e.module()->probe(reinterpret_cast<uintptr_t>(reserved.base), n);
		const int64_t t1 = time_ns();
		benchmark::DoNotOptimize(out.data());
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		total_ns += t1 - t0;
	}
	set_rate(state, total_ns, n);
}

uint64_t anon_huge_kb()
{
	std::ifstream in("/proc/self/smaps_rollup");
	for (std::string key; in >> key;) {
		uint64_t kb = 0;
		if (key == "AnonHugePages:" && in >> kb)
			return kb;
		in.ignore(1 << 20, '\n');
	}
	return 0;
}

// populate/<4k|thp>/<bytes>: MADV_POPULATE_WRITE of a new mapping, 4 KiB
// pages (as populated_pages() and so press_towards() fault them) or
// transparent huge pages. The mapping and its unmapping are untimed.
void bm_populate(benchmark::State &state, bool thp)
{
	const size_t bytes = size_t(state.range(0));
	if (auto why = fits(env::get().restricted(), bytes, false); !why.empty()) {
		state.SkipWithError(why.c_str());
		return;
	}
	constexpr size_t huge = 2 << 20;
	int64_t total_ns = 0;
	double huge_share = 0;
	for (auto _ : state) {
		mapping m = mapping::anonymous(bytes + huge, false);
		// 2 MiB aligned start, so that every 2 MiB can be one THP.
		const uintptr_t start = (m.addr() + huge - 1) & ~(uintptr_t(huge) - 1);
		void *p = reinterpret_cast<void *>(start);
		madvise(p, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		const uint64_t huge_before = anon_huge_kb();
		const int64_t t0 = time_ns();
		const int rc = madvise(p, bytes, MADV_POPULATE_WRITE);
		const int64_t t1 = time_ns();
		if (rc) {
			state.SkipWithError(("MADV_POPULATE_WRITE: " + std::string(std::strerror(errno))).c_str());
			break;
		}
		huge_share += double((anon_huge_kb() - huge_before) << 10) / double(bytes);
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		total_ns += t1 - t0;
	}
	if (total_ns > 0) {
		state.counters["MiB_per_s"] = double(bytes >> 20) * double(state.iterations()) / (double(total_ns) * 1e-9);
		state.counters["thp_share"] = huge_share / double(state.iterations());
	}
}

} // namespace

void register_probe()
{
	benchmark::RegisterBenchmark("probe/unpopulated", bm_probe, false)
		->Arg(int64_t(1) << 30)
		->Iterations(iterations(10))
		->UseManualTime()
		->Unit(benchmark::kMillisecond);
	benchmark::RegisterBenchmark("probe/suite_path", bm_probe_suite_path)
		->Arg(int64_t(1) << 30)
		->Iterations(iterations(10))
		->UseManualTime()
		->Unit(benchmark::kMillisecond);
	benchmark::RegisterBenchmark("probe/populated", bm_probe, true)
		->Arg(64 << 20)
		->Iterations(iterations(20))
		->UseManualTime()
		->Unit(benchmark::kMillisecond);
}

void register_populate()
{
	for (auto [thp, label] : {std::pair{false, "populate/4k"}, std::pair{true, "populate/thp"}})
		benchmark::RegisterBenchmark(label, bm_populate, thp)
			->Arg(64 << 20)
			->Iterations(iterations(5))
			->UseManualTime()
			->Unit(benchmark::kMillisecond);
}

} // namespace pinmatrix::bench
