// SPDX-License-Identifier: GPL-2.0
#pragma once

// Every long-term pinner that runs here (cases/pinner/): a page of the
// boot's restricted memory (ZONE_MOVABLE or CMA) handed to a kernel
// subsystem that holds it for as long as user space says, and where the
// page is afterwards. What each pinner does differs by kernel version, so
// the table says it by version: udmabuf pins through memfd_pin_folios()
// (FOLL_LONGTERM-like: the page leaves restricted memory first) from 6.11
// and took plain page references (shmem_read_mapping_page(): the page
// stays) before; an on-demand-paging MR pins nothing (the page stays and
// can be given back). The vDPA simulator (vhost-vdpa), VFIO type1 (QEMU's
// edu device behind intel-iommu) and iommufd's self-test mock domain (6.2
// on, CONFIG_IOMMUFD_TEST) map the page for a device with a long-term pin:
// the page moves first.
// gup_test pins more than 2 GiB in one pin_user_pages(FOLL_LONGTERM) call,
// which 6.11 refused (53ba78de064b, fixed by 94efde1d1539).
// Table, body and judge, as the other suites.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "table_suite.hpp"
#include "page_probe.hpp"
#include "placement.hpp"

namespace pinmatrix::pinner_cases {

// What a pinner does to a page of restricted memory it is handed.
enum class page_fate {
	moved,		// a long-term pin: the page leaves restricted memory before it is held
	stays_gap,	// plain page references: the page stays (a known gap of those kernels)
	stays_no_pin,	// no pin at all (on-demand paging): the page stays and can be given back
	// A page no migration can move (a CMA heap's: cma_alloc()ed, on no
	// LRU): the pin must end, refused with an errno or held in place; a
	// retry without end is the bug.
	never_movable,
};
const char *name(page_fate f);

// One row of a pinner's expectation: the kernels it holds on, and why.
struct version_expectation {
	version_range versions;
	page_fate fate;
	const char *source;	// where the kernel does it (file: function)
};

enum class pinner_kind { udmabuf, rxe_odp, iommufd_mock, vdpa_sim, vfio_type1, cma_heap, gup_test_over_2g };

struct pinner_case {
	const char *name;
	const char *checks;		// for `pinmatrix cases`
	const char *pinner;		// the call that pins ("UDMABUF_CREATE", "ibv_reg_mr(IBV_ACCESS_ON_DEMAND)")
	pinner_kind kind;
	std::vector<version_expectation> by_version;	// never empty
	// Whether the pinner holds its pin while the case asks for the memory
	// back; gup_test's pins last one ioctl.
	bool held = true;

	std::string id() const { return std::string("pinner/") + name; }
};

const std::vector<pinner_case> &case_table();

// The row a kernel is judged under. Where no row can be chosen (the
// version cannot be read and the rows differ, or no row covers it) the
// fate is unknown and the case is a SKIP that says so.
struct expectation {
	std::optional<page_fate> fate;
	std::string summary;
	std::string versions;		// the row's kernels, "6.11.0 on (c6a3194c05e7)"
	std::string source;
	std::string kernel;		// the version judged under, or "unknown"
	// The give-back oracle's answer with the pin held (lib/give_back.hpp).
	std::optional<bool> given_back_while_held;
};
expectation expectation_for(const pinner_case &c, const std::optional<kernel_version> &v);

struct body_options {
	std::string device;		// RDMA device; empty: the first one
	placement restricted = placement::movable;
	size_t find_budget_bytes = 256 << 20;
	// The kernel the body runs on: how patiently it asks for memory back.
	std::optional<kernel_version> kernel;
	// How long a pin that must end may take before it is taken for a
	// retry without end (pinner/cma-heap).
	std::chrono::seconds pin_bound{10};
};

// The body, in the case's process: {"observation": {...}}, its pages read
// through the test module, or under --no-module through pagemap. Throws
// unmet_need (a SKIP, with its reason) where the pinner or the page is
// missing.
nlohmann::json run_case(const pinner_case &c, const suite_options &opt);

// The suite: its table, needs, body and judge.
extern const suite_definition<pinner_case> definition;

} // namespace pinmatrix::pinner_cases
