// SPDX-License-Identifier: GPL-2.0
#pragma once

// Every backing of a registration (cases/backing/): ibv_reg_mr over memory
// of one kind (backing_memory.hpp), found first in the boot's restricted
// memory where the kind can live there. The contract is the pin suite's: a
// registration that succeeds leaves no page in ZONE_MOVABLE or CMA. What
// differs is whether the kernel registers at all, and that changed between
// versions (a writable long-term pin of a file mapping is refused from 6.5;
// ib_umem_get() forced a write before 6.2), so each row lists its outcome
// by the upstream version it holds from. Table, body and judge, as the
// other suites.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backing_memory.hpp"
#include "table_suite.hpp"

namespace pinmatrix::backing_cases {

// What a registration's pages must be once it succeeded.
enum class pages_after {
	out_of_restricted,	// none left in ZONE_MOVABLE or CMA
	fresh_private,		// present, none the zero page, none in restricted memory
};

// On the kernels of `versions`: ibv_reg_mr answers `err` (0: it
// registers). The expectation stays the contract; a known bug of some
// kernels that breaks it is in matrix/known_bugs.cpp, which makes such a
// FAIL an expected one.
struct version_outcome {
	version_range versions;
	int err;
	const char *because;	// where the kernel decides it
};

// Which of GUP's two paths a row's pin meets first. The kernel enforces the
// long-term rules twice: in GUP-fast (gup_fast_folio_allowed(), the
// pinnable check of try_grab_folio_fast()), which decides only for a page
// present with the needed permission in the page table, and in the slow
// path (check_vma_flags(), check_and_migrate_movable_folios()).
enum class gup_path {
	fast,	// the pages present and, for a writable MR, written through the registered mapping just before
	slow,	// registered through a second mapping of the same file, never touched: no PTE for GUP-fast
};
const char *name(gup_path p);	// "fast", "slow"

struct backing_case {
	const char *name;
	const char *checks;		// for `pinmatrix cases`
	backing kind;
	bool writable_mr;		// IBV_ACCESS_LOCAL_WRITE | REMOTE_*; else a read-only MR
	bool writable_mapping;		// the file backing: PROT_WRITE
	bool starts_restricted;		// the memory is found in restricted memory first
	size_t register_bytes;		// from the region's start (at most the region)
	pages_after after;
	std::vector<version_outcome> outcomes;	// ranges that do not overlap
	gup_path path = gup_path::fast;

	std::string id() const { return std::string("backing/") + name; }
};

const std::vector<backing_case> &case_table();

// The outcome row for kernel v; nullptr when v is unknown and the rows
// differ (the expectation cannot be known).
const version_outcome *outcome_for(const backing_case &c, const std::optional<kernel_version> &v);

// The body, in the case's process: {"observation": {...}}, the row's
// registration traced. Throws unmet_need (a SKIP) when the backing or the
// RDMA device is not here.
nlohmann::json run_case(const backing_case &c, const suite_options &opt);

// The suite: its table, needs, body and judge.
extern const suite_definition<backing_case> definition;

} // namespace pinmatrix::backing_cases
