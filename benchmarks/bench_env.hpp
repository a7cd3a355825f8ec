// SPDX-License-Identifier: GPL-2.0
#pragma once

// What every benchmark family shares: the test module, the RDMA device, the
// placements this boot has, fresh pages in a placement, and whether a size
// fits in the memory there is.
//
// Fresh pages: a long-term pin migrates a page out of ZONE_MOVABLE or a
// MIGRATE_CMA pageblock, so a page registered once is no longer in the
// placement it was measured for. Every benchmark that pins therefore maps,
// populates and probes a new mapping for each iteration, outside the timed
// region (manual timing: only the pin/unpin or reg/dereg calls are between
// the two clock reads, see time_ns()), and unmaps it after the iteration.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clock.hpp"
#include "mapping.hpp"
#include "pin_module.hpp"
#include "placement.hpp"
#include "verbs.hpp"

namespace pinmatrix::bench {

struct options {
	std::string module_ko;	// pinmatrix.ko to load when /dev/pinmatrix is absent
	std::string device;	// RDMA device; empty: the first
	size_t pressure_budget_mib = 0;	// 0: MemAvailable less 256 MiB
	double iterations_scale = 1;	// multiplies every fixed iteration count
};

// Process-wide state, set up once by main() before the benchmarks run.
class env {
public:
	static env &get();
	void init(const options &opt);

	const options &opts() const { return opt_; }
	// nullptr when unavailable; *_why() says why.
	const pin_module *module() const { return module_ ? &*module_ : nullptr; }
	const std::string &module_why() const { return module_why_; }
	const verbs_device *device() const { return device_ ? &*device_ : nullptr; }
	const std::string &device_why() const { return device_why_; }

	// Every placement of this boot: movable (when it has ZONE_MOVABLE),
	// ordinary, cma (when it has a CMA area).
	const std::vector<placement> &placements() const { return placements_; }
	placement restricted() const { return restricted_; }

	// Makes fresh anonymous pages land in p: releases the memory held for
	// another placement and, when new pages do not land in p by themselves
	// (ordinary memory in a movable boot, CMA), fills memory with
	// press_towards() and holds it. Returns an error text, or empty.
	std::string steer_towards(placement p);
	// steer_towards(p), then fits(p, bytes, migrates): empty when a
	// benchmark of that size can run, else why not.
	std::string make_room(placement p, size_t bytes, bool migrates);
	// The memory held by steer_towards() now.
	size_t pressure_bytes() const { return pressure_.bytes; }

	~env();

private:
	options opt_;
	std::optional<pin_module> module_;
	std::string module_why_;
	bool loaded_module_ = false;
	std::optional<verbs_device> device_;
	std::string device_why_;
	std::vector<placement> placements_;
	placement restricted_ = placement::ordinary;
	std::optional<placement> steered_;
	placement_pressure pressure_;
};

// CLOCK_MONOTONIC_RAW, the clock the suite's latencies use.
inline int64_t time_ns() { return monotonic_raw_ns(); }

// Free memory by placement right now (/proc/zoneinfo, /proc/meminfo), less
// each zone's high watermark: what an allocation can take without reclaim.
struct free_memory {
	uint64_t ordinary = 0;	// DMA32 + Normal (+ DMA), CMA pages excluded
	uint64_t movable = 0;	// ZONE_MOVABLE
	uint64_t cma = 0;	// CmaFree
	uint64_t of(placement p) const;
};
free_memory read_free_memory();

// Empty when `bytes` fresh pages in p (and, for a placement a long-term pin
// migrates out of, as many again in ordinary memory for the copies) fit with
// a margin; else why not, for SkipWithError.
std::string fits(placement p, size_t bytes, bool migrates);

// A new mapping of `bytes`, 4 KiB pages (THP off), populated for write, and
// the share of its pages that the module probes in placement p: at least
// fresh_share unless fresh_attempts mappings all fell short.
struct fresh_pages {
	mapping map;
	double in_placement = 0;	// 0..1
	size_t pages = 0;
	std::vector<mapping> aside;	// attempts that fell short, held until the iteration ends
	// Empty when at least fresh_share of the pages are in p, else why not.
	std::string shortfall(placement p) const;
};
inline constexpr double fresh_share = 0.9;
inline constexpr int fresh_attempts = 3;
fresh_pages map_fresh(const pin_module &module, placement p, size_t bytes);
// map_fresh() for one iteration of state; nullopt (the benchmark skipped
// with the shortfall) when too few of its pages landed in p.
std::optional<fresh_pages> fresh_or_skip(benchmark::State &state, const pin_module &module, placement p,
					 size_t bytes);

// The share of m's pages (0..1) that the module probes in placement p.
double share_in(const pin_module &module, const mapping &m, placement p);

// "4 KiB", "1 MiB", "256 MiB".
std::string size_label(uint64_t bytes);

// Benchmark families (each file registers its own).
void register_harness();
void register_probe();
void register_populate();
void register_ualink();
// Per placement, so that memory is steered towards each placement once.
void register_reg_mr(placement p);
void register_module_pin(placement p);
void register_gup_test(placement p);

// Sizes of the pinning families: 4 KiB ... 256 MiB, powers of 4.
inline constexpr int64_t min_size = 4 << 10;
inline constexpr int64_t max_size = 256 << 20;

// Iteration counts are fixed, not found from --benchmark_min_time: the
// untimed part of an iteration (a fresh mapping populated and probed, a new
// BO exported) costs up to hundreds of times the timed calls, so a minimum
// of timed time would make the wall time unbounded. n, scaled by
// --pm_iterations_scale, at least 1.
int64_t iterations(int64_t n);
// For a size: 256 MiB worth of pages per benchmark, between 3 and 500
// iterations (4 KiB .. 256 KiB: 500, 1 MiB: 256, 64 MiB: 4, 256 MiB: 3).
int64_t iterations_for(int64_t bytes);

// Registers name/<size> for each size with its own iteration count, manual
// time, microseconds. fn(state) reads the size from state.range(0).
template <typename Fn>
void register_sized(const std::string &name, std::vector<int64_t> sizes, Fn fn)
{
	for (int64_t size : sizes)
		benchmark::RegisterBenchmark(name.c_str(), fn)
			->Arg(size)
			->Iterations(iterations_for(size))
			->UseManualTime()
			->Unit(benchmark::kMicrosecond);
}
// 4 KiB ... 256 MiB, powers of 4.
std::vector<int64_t> pinning_sizes();

// Common counters of a pinning benchmark: ns per 4 KiB page of the timed
// calls, the share of pages in the placement before the pin, pages.
void set_pin_counters(benchmark::State &state, int64_t total_ns, double in_placement_sum, size_t pages);

} // namespace pinmatrix::bench
