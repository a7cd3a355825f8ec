// SPDX-License-Identifier: GPL-2.0
#pragma once

// What a pin case saw, and the verdict that follows from comparing it with
// its row of the table (pin_table.cpp) and the rule (matrix/rules.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "give_back.hpp"
#include "plan.hpp"
#include "rules.hpp"
#include "step_clock.hpp"
#include "verdict.hpp"

namespace pinmatrix {

struct page_state {
	uint64_t pfn = 0;
	std::string placement;		// "ordinary" | "movable" | "cma" | "absent"
	std::string zone;
	std::string migratetype;
	// folio_is_longterm_pinnable(); nullopt: unknown (CONFIG_CMA and the
	// pageblock's migratetype unreadable on this kernel).
	std::optional<bool> longterm_pinnable;
	bool maybe_dma_pinned = false;
	uint32_t refcount = 0;
	std::string cma_area;		// debugfs CMA area holding the PFN, if any
};

struct recovery_record {
	int errno_value = 0;		// registration once the first pin is gone
	int64_t latency_ns = 0;
	uint64_t pfn_after = 0;
};

struct observation {
	page_state before;
	std::optional<page_state> after_first_pin;
	std::optional<page_state> after_registration;
	// With every pin of the case released (the MR, the first pin and the
	// recovery's MR): the page at the case's address, where a pin that
	// outlived its release still reads maybe_dma_pinned.
	std::optional<page_state> after_release;
	int first_pin_errno = 0;
	std::vector<uint64_t> first_pin_pfns;
	int registration_errno = 0;
	int64_t latency_ns = 0;
	// Latency as a distribution, outside the verdict: latency_ns, then the
	// same registration repeated on fresh pages of the placement with the
	// same first pin held (suite_options::latency_samples in all), each
	// repeat that ended as the case's registration did; the others' errno
	// names in latency_repeats_otherwise.
	std::vector<int64_t> latency_samples_ns;
	std::vector<std::string> latency_repeats_otherwise;
	std::optional<bool> rdma_write_readback;	// success: device and CPU agree
	std::string rdma_detail;
	std::optional<bool> content_intact;		// failure: page unchanged
	std::optional<recovery_record> recovery;
	size_t scanned_bytes = 0;			// to find the page
	// Which probe read the pages (lib/page_probe.hpp): "module", or
	// "pagemap" under --no-module (no refcount, no maybe_dma_pinned).
	std::string probe;
	// Who took the first pin (module, io_uring, the GPU driver's library)
	// and, for a driver, its own error and what its version predicts.
	std::string first_pinner;
	std::string first_pin_detail;
	std::optional<bool> longterm_by_version;
	// How the success check wrote through the second pin: "rdma-write"
	// (loopback RDMA WRITE) or "io_uring-read-fixed" (the kernel's
	// READ_FIXED into the fixed buffer); rdma_write_readback holds the result.
	std::string readback_method;
	// The harm (lib/give_back.hpp), for a page that started in restricted
	// memory: that memory asked back with every pin held, and, after a
	// refused registration, once the first pin was released.
	std::optional<give_back_attempt> give_back_held;
	std::optional<give_back_attempt> give_back_released;
	// The control, at the case's end with every pin of it released: a
	// block that does not go back then was kept by other memory in it (a
	// machine under memory pressure), and the answers above prove nothing.
	std::optional<give_back_attempt> give_back_control;
	// Where the case's time went, step by step (lib/step_clock.hpp).
	step_times time_ms;

	bool migrated_by_first_pin() const;
	bool migrated_by_registration() const;
	uint64_t pfn_after() const;
	std::string summary() const;	// "moved 0x20a5a->0x30bf, ok", "ENOMEM (12), page intact"
};

struct case_result {
	case_def def;
	expectation expected;
	std::optional<observation> observed;	// absent for skip/error before the case ran
	verdict outcome = verdict::error;
	std::string reason;			// for anything but pass
	int64_t duration_ns = 0;
};

// Compares an observation with its expectation: pass, or fail with every
// mismatch named in the reason.
case_result judge(const case_def &def, const observation &obs);
case_result not_run(const case_def &def, verdict v, std::string reason);

} // namespace pinmatrix
