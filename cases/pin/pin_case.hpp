// SPDX-License-Identifier: GPL-2.0
#pragma once

// One leaf of the pin causal matrix, run in the calling process:
//   find a page in the case's placement -> take and hold the first pin ->
//   ibv_reg_mr on the same page -> evidence (PFN and placement at each step,
//   errno, latency) -> RDMA WRITE readback on success, or content check and
//   recovery (release the first pin, register again) on failure.

#include <cstddef>

#include "pin_module.hpp"
#include "placement.hpp"
#include "plan.hpp"
#include "common/second_pin.hpp"
#include "pin_judge.hpp"

namespace pinmatrix {

// The page a pin case looks for: in ZONE_MOVABLE, preferably one whose
// memory block could be given back (lib/give_back.hpp), so that the harm
// oracle can answer.
page_wish pin_page_wish(placement where);

// What a case reads its pages with and takes the module's pins through:
// the test module for both, or under --no-module the pagemap probe
// (lib/page_probe.hpp) and no module at all.
struct case_tools {
	const page_prober &probe;
	const pin_module *module;	// null under --no-module
};

// Throws unmet_need when no page in the placement was found within
// find_budget_bytes (the kernel has no such memory: a SKIP).
// The second pin is `second` (ibv_reg_mr or io_uring, cases/common/second_pin.hpp).
// Each step is marked on clock as it ends (observation::time_ms).
observation run_pin_case(const case_def &c, const case_tools &tools, second_pinner &second,
			 size_t find_budget_bytes, step_clock &clock);

// Latency as a distribution, after the case and outside its verdict and
// telemetry: the case's registration again on fresh pages of its placement,
// the same first pin held, until `samples` are timed in all
// (observation::latency_samples_ns). Nothing for a case that did not reach
// its registration, or whose first pinner allocates its own page.
void time_registration_again(const case_def &c, const case_tools &tools, second_pinner &second, int samples,
			     observation &obs);

// A first pinner that allocates its own page (cudaHostAlloc): the page is
// where the driver put it, then the same steps (cases/pinner_alloc_case.cpp).
observation run_pinner_alloc_case(const case_def &c, const case_tools &tools, second_pinner &second);

page_state describe(const pinmatrix_page &page, const std::vector<cma_area> &areas = {});

} // namespace pinmatrix
