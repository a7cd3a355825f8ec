// SPDX-License-Identifier: GPL-2.0
#pragma once

// The data path of an on-demand-paging MR at offsets: RDMA WRITE and READ
// of one packet inside a page, of several packets, across a page boundary,
// a SEND received into it, an MR that does not start on a page, and both
// atomics; each transfer through an ordinary MR first (its control), then
// through an ODP MR over the same kind of memory, with bytes that differ at
// every offset (tools/rxe-odp-offset.c is the same, stand-alone).

#include <cstdint>

#include <nlohmann/json.hpp>

#include "verbs.hpp"

namespace pinmatrix::pinner_cases {

// {"transfers": [{"transfer", "ordinary": {"same", "detail"[, "misplaced"]},
//                 "odp": {... or "offered": false}}]}; "misplaced": the
// bytes moved, but to or from another offset than the one asked.
nlohmann::json odp_data_path(const verbs_device &dev, uint32_t rc_odp_caps);

} // namespace pinmatrix::pinner_cases
