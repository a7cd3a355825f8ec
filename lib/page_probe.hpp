// SPDX-License-Identifier: GPL-2.0
#pragma once

// Where the caller's own pages are, as struct pinmatrix_page: from the test
// module (pin_module, PINMATRIX_IOC_PROBE: zone, the pageblock's
// migratetype, folio_is_longterm_pinnable(), refcount), or without any
// out-of-tree module (--no-module, a Secure Boot node) from what the stock
// kernel shows root: /proc/self/pagemap for the PFN, /proc/zoneinfo for its
// zone, the CMA areas (debugfs, the boot log, /proc/pagetypeinfo) for
// MIGRATE_CMA, /proc/kpageflags for the zero page.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pinmatrix.h"

namespace pinmatrix {

class page_prober {
public:
	virtual ~page_prober() = default;
	// One entry per page of [addr, addr + npages pages); throws
	// std::system_error when the pages cannot be read at all.
	virtual std::vector<pinmatrix_page> probe_pages(uintptr_t addr, size_t npages) const = 0;
	pinmatrix_page probe_page(uintptr_t addr) const { return probe_pages(addr, 1).at(0); }
	// "module" or "pagemap": which probe a record's pages came from.
	virtual const char *probe_name() const = 0;
};

// The stock kernel's view. What it cannot tell is left unknown, never
// guessed: no refcount (0), no folio_maybe_dma_pinned(), the migratetype
// only as MIGRATE_CMA for a PFN inside an area the kernel named; a PFN in a
// zone that holds CMA pageblocks the kernel did not place (7.x's
// hugetlb_cma) has PINNABLE_KNOWN unset.
class pagemap_prober final : public page_prober {
public:
	std::vector<pinmatrix_page> probe_pages(uintptr_t addr, size_t npages) const override;
	const char *probe_name() const override { return "pagemap"; }
};

} // namespace pinmatrix
