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
#include "verbs.hpp"
#include "verdict.hpp"

namespace pinmatrix {

// Throws unmet_need when no page in the placement was found within
// find_budget_bytes (the kernel has no such memory: a SKIP).
observation run_pin_case(const case_def &c, const pin_module &module, const verbs_device &dev,
			 size_t find_budget_bytes);

page_state describe(const pinmatrix_page &page, const std::vector<cma_area> &areas = {});

} // namespace pinmatrix
