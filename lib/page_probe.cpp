// SPDX-License-Identifier: GPL-2.0
#include "page_probe.hpp"

#include <unistd.h>

#include "placement.hpp"
#include "proc_pages.hpp"

namespace pinmatrix {

namespace {

uint8_t zone_number(const std::string &zone)
{
	static const std::pair<const char *, uint8_t> zones[] = {
		{"DMA", PINMATRIX_ZONE_DMA},	     {"DMA32", PINMATRIX_ZONE_DMA32},
		{"Normal", PINMATRIX_ZONE_NORMAL},   {"HighMem", PINMATRIX_ZONE_HIGHMEM},
		{"Movable", PINMATRIX_ZONE_MOVABLE}, {"Device", PINMATRIX_ZONE_DEVICE}};
	for (const auto &[name, number] : zones)
		if (zone == name)
			return number;
	return PINMATRIX_ZONE_UNKNOWN;
}

constexpr uint64_t kpf_zero_page = uint64_t(1) << 24;

// An area the kernel named (exact) holds the PFN: its pageblock is
// MIGRATE_CMA. One it did not (a zone with CMA pageblocks) leaves it open.
enum class cma_answer { no, yes, maybe };

cma_answer in_cma(const std::vector<cma_area> &areas, uint64_t pfn)
{
	cma_answer a = cma_answer::no;
	for (const auto &area : areas)
		if (pfn >= area.base_pfn && pfn < area.base_pfn + area.count) {
			if (area.exact)
				return cma_answer::yes;
			a = cma_answer::maybe;
		}
	return a;
}

pinmatrix_page page_of(const proc_page &p, const std::vector<cma_area> &areas)
{
	pinmatrix_page page{};
	page.zone = PINMATRIX_ZONE_UNKNOWN;
	page.migratetype = PINMATRIX_MT_UNKNOWN;
	if (!p.present || !p.pfn)
		return page;
	page.flags = PINMATRIX_PAGE_PRESENT;
	page.pfn = *p.pfn;
	page.zone = zone_number(p.zone);
	if (p.kpageflags && (*p.kpageflags & kpf_zero_page))
		page.flags |= PINMATRIX_PAGE_ZERO;
	const cma_answer cma = in_cma(areas, *p.pfn);
	if (cma == cma_answer::yes) {
		page.migratetype = PINMATRIX_MT_CMA;
		page.flags |= PINMATRIX_PAGE_MT_KNOWN;
	}
	if (cma != cma_answer::maybe && page.zone != PINMATRIX_ZONE_UNKNOWN) {
		page.flags |= PINMATRIX_PAGE_PINNABLE_KNOWN;
		if (cma == cma_answer::no && page.zone != PINMATRIX_ZONE_MOVABLE)
			page.flags |= PINMATRIX_PAGE_LONGTERM_PINNABLE;
	}
	return page;
}

} // namespace

std::vector<pinmatrix_page> pagemap_prober::probe_pages(uintptr_t addr, size_t npages) const
{
	const auto areas = read_cma_areas();
	std::vector<pinmatrix_page> out;
	out.reserve(npages);
	for (const auto &p : read_proc_pages(getpid(), addr, npages))
		out.push_back(page_of(p, areas));
	return out;
}

} // namespace pinmatrix
