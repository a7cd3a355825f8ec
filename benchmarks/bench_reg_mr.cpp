// SPDX-License-Identifier: GPL-2.0
// ibv_reg_mr + ibv_dereg_mr latency by size and placement, and the harness
// overhead: the raw ibv_reg_mr call against the suite's measured path.

#include <cerrno>
#include <cstring>

#include "bench_env.hpp"

namespace pinmatrix::bench {

namespace {

bool need_module_and_device(benchmark::State &state)
{
	const env &e = env::get();
	if (!e.module()) {
		state.SkipWithError(("no test module: " + e.module_why()).c_str());
		return false;
	}
	if (!e.device()) {
		state.SkipWithError(("no RDMA device: " + e.device_why()).c_str());
		return false;
	}
	return true;
}

// reg_mr/<placement>/<bytes>: a fresh mapping per iteration (populated and
// probed untimed); timed: ibv_reg_mr (ib_umem_get -> FOLL_LONGTERM, which
// migrates movable and CMA pages first) and ibv_dereg_mr.
void bm_reg_mr(benchmark::State &state, placement p)
{
	if (!need_module_and_device(state))
		return;
	env &e = env::get();
	const size_t bytes = size_t(state.range(0));
	if (auto why = e.make_room(p, bytes, !traits(p).longterm_pinnable); !why.empty()) {
		state.SkipWithError(why.c_str());
		return;
	}
	ibv_pd *pd = e.device()->pd();
	int64_t total_ns = 0, reg_ns = 0;
	double in_placement = 0;
	size_t pages = 0;
	for (auto _ : state) {
		auto fresh = fresh_or_skip(state, *e.module(), p, bytes);
		if (!fresh)
			break;
		const fresh_pages &f = *fresh;
		pages = f.pages;
		const int64_t t0 = time_ns();
		ibv_mr *mr = ibv_reg_mr(pd, f.map.data(), bytes, registration_access);
		const int64_t t1 = time_ns();
		if (!mr) {
			const int err = errno;
			state.SkipWithError(("ibv_reg_mr of " + size_label(bytes) + ": " + std::strerror(err)).c_str());
			break;
		}
		ibv_dereg_mr(mr);
		const int64_t t2 = time_ns();
		state.SetIterationTime(double(t2 - t0) * 1e-9);
		total_ns += t2 - t0;
		reg_ns += t1 - t0;
		in_placement += f.in_placement;
	}
	set_pin_counters(state, total_ns, in_placement, pages);
	if (state.iterations() && pages)
		state.counters["reg_ns_per_page"] = double(reg_ns) / (double(state.iterations()) * double(pages));
}

// One 4 KiB page that a long-term pin may keep where it is: registered once
// (a movable page migrates then), so later registrations move nothing.
struct pinnable_page {
	mapping map = populated_pages(page_size());
	explicit pinnable_page(ibv_pd *pd)
	{
		if (ibv_mr *mr = ibv_reg_mr(pd, map.data(), page_size(), registration_access))
			ibv_dereg_mr(mr);
	}
};

// harness/clock_read: one CLOCK_MONOTONIC_RAW read, the suite's timer.
void bm_clock_read(benchmark::State &state)
{
	for (auto _ : state)
		benchmark::DoNotOptimize(time_ns());
}

// harness/ibv_reg_mr_raw/4096: the bare call between two clock reads (what
// a case's latency_ns brackets); ibv_dereg_mr untimed.
void bm_reg_raw(benchmark::State &state)
{
	if (!need_module_and_device(state))
		return;
	ibv_pd *pd = env::get().device()->pd();
	pinnable_page page(pd);
	for (auto _ : state) {
		const int64_t t0 = time_ns();
		ibv_mr *mr = ibv_reg_mr(pd, page.map.data(), page_size(), registration_access);
		const int64_t t1 = time_ns();
		if (!mr) {
			state.SkipWithError("ibv_reg_mr failed");
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		ibv_dereg_mr(mr);
	}
}

// harness/register_memory/4096: the suite's measured path, register_memory()
// (lib/verbs.cpp), timed from outside; `reported_ns` is the latency it
// reports. Outside minus reported is the wrapper's cost; reported minus
// ibv_reg_mr_raw is what the suite's number adds to the call.
void bm_register_memory(benchmark::State &state)
{
	if (!need_module_and_device(state))
		return;
	const verbs_device &dev = *env::get().device();
	pinnable_page page(dev.pd());
	int64_t reported = 0;
	for (auto _ : state) {
		const int64_t t0 = time_ns();
		registration reg = register_memory(dev, page.map.data(), page_size());
		const int64_t t1 = time_ns();
		if (!reg.mr) {
			state.SkipWithError("register_memory failed");
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		reported += reg.latency_ns;
	}
	if (state.iterations())
		state.counters["reported_ns"] = double(reported) / double(state.iterations());
}

// harness/case_path/4096: what a pin case does around its one measured
// registration, without the child process and the RDMA write: find a fresh
// page in the restricted placement (find_page), probe it, register it
// (register_memory), probe it again. `reported_ns` is the registration
// latency the case would report; the rest is the harness.
void bm_case_path(benchmark::State &state)
{
	if (!need_module_and_device(state))
		return;
	env &e = env::get();
	const placement p = e.restricted();
	if (auto why = e.steer_towards(p); !why.empty()) {
		state.SkipWithError(why.c_str());
		return;
	}
	int64_t reported = 0;
	for (auto _ : state) {
		const int64_t t0 = time_ns();
		auto found = find_page(*e.module(), p, 64 << 20);
		if (!found) {
			state.SkipWithError(("no fresh page in " + std::string(name(p)) + " memory").c_str());
			break;
		}
		benchmark::DoNotOptimize(e.module()->probe_one(found->map.addr()));
		registration reg = register_memory(*e.device(), found->map.data(), page_size());
		benchmark::DoNotOptimize(e.module()->probe_one(found->map.addr()));
		const int64_t t1 = time_ns();
		if (!reg.mr) {
			state.SkipWithError("register_memory failed");
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		reported += reg.latency_ns;
	}
	if (state.iterations())
		state.counters["reported_ns"] = double(reported) / double(state.iterations());
}

} // namespace

void register_reg_mr(placement p)
{
	register_sized("reg_mr/" + std::string(name(p)), pinning_sizes(),
		       [p](benchmark::State &state) { bm_reg_mr(state, p); });
}

void register_harness()
{
	benchmark::RegisterBenchmark("harness/clock_read", bm_clock_read);
	register_sized("harness/ibv_reg_mr_raw", {4096}, bm_reg_raw);
	register_sized("harness/register_memory", {4096}, bm_register_memory);
	// Each iteration faults in a 16 MiB chunk, as find_page() does.
	benchmark::RegisterBenchmark("harness/case_path", bm_case_path)
		->Arg(4096)
		->Iterations(iterations(20))
		->UseManualTime()
		->Unit(benchmark::kMicrosecond);
}

} // namespace pinmatrix::bench
