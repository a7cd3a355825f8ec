// SPDX-License-Identifier: GPL-2.0
#pragma once

// Where a page lives, as far as a long-term pin cares: ordinary memory it
// may stay in, or ZONE_MOVABLE / a MIGRATE_CMA pageblock it must leave first.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mapping.hpp"
#include "pin_module.hpp"

namespace pinmatrix {

// (The order is used as an index by cases/pin/plan.cpp.)
enum class placement { ordinary, movable, cma };

struct placement_traits {
	placement kind;
	const char *name;
	// is_longterm_pinnable_page(): may a long-term pin leave the page here?
	bool longterm_pinnable;
	const char *meaning;
};

const placement_traits &traits(placement p);
std::string_view name(placement p);
std::optional<placement> parse_placement(std::string_view s);

// The memory of this boot that a long-term pin may not stay in: CMA when
// the kernel reserved some (CmaTotal), else ZONE_MOVABLE when it has pages,
// else ordinary (there is none).
placement detect_restricted_placement();
// Every restricted placement this boot has, CMA first (a boot may have both
// ZONE_MOVABLE and a CMA area, e.g. the "all" boot placement).
std::vector<placement> restricted_placements();

// CMA areas: the cross-check for a page whose pageblock says MIGRATE_CMA.
// From debugfs (/sys/kernel/debug/cma/<name>/base_pfn, count, or
// ranges/<n>/ from 6.19) where the kernel has CMA_DEBUGFS, else from the
// boot log's "cma: Reserved N MiB at ADDR" lines, else (a multi-range area
// whose boot log names no address) each zone /proc/pagetypeinfo counts
// MIGRATE_CMA pageblocks in; `source` says which.
struct cma_area {
	std::string name;
	uint64_t base_pfn = 0;
	uint64_t count = 0;
	std::string source;	// "debugfs <dir>", "kernel log: ..." or "/proc/pagetypeinfo: ..."
	// false: a whole zone that holds CMA pageblocks (pagetypeinfo), not
	// the area itself: it confirms only a page whose pageblock says CMA.
	bool exact = true;
};
std::vector<cma_area> read_cma_areas();
// The area holding pfn, or empty. An inexact area (a zone) counts only
// when the page's own pageblock says MIGRATE_CMA.
std::string cma_area_of(const std::vector<cma_area> &areas, uint64_t pfn, bool pageblock_says_cma = false);
std::string cma_area_of(const std::vector<cma_area> &areas, const pinmatrix_page &page);

// The placement of a probed page; nullopt when it is absent, the zero page,
// or not known to be outside CMA (PINMATRIX_PAGE_PINNABLE_KNOWN unset).
std::optional<placement> classify(const pinmatrix_page &page);
// classify() by name: "absent" for no page or the zero page, "unknown" for
// a page it cannot place.
std::string placement_of(const pinmatrix_page &page);
// The module's folio_is_longterm_pinnable(); nullopt when it does not know
// or there is no page.
std::optional<bool> longterm_pinnable(const pinmatrix_page &page);

// One /proc/meminfo field ("MemAvailable", "CmaFree"), in bytes; 0 when absent.
uint64_t meminfo_bytes(std::string_view field);

struct found_page {
	mapping map;		// exactly one page
	pinmatrix_page page;	// as probed when found
	size_t scanned_bytes = 0;
};

// A page of the wanted placement that, where `prefer` is given, it accepts
// (the pin suite: one whose memory could be given back, lib/give_back.hpp).
// A preference is looked for in at most prefer_bytes past the first page of
// the placement; then that first page does.
struct page_wish {
	// NOLINTNEXTLINE(google-explicit-constructor): a placement alone is a wish
	page_wish(placement w, bool (*p)(uint64_t pfn) = nullptr) : want(w), prefer(p) {}
	placement want;
	bool (*prefer)(uint64_t pfn) = nullptr;
	size_t prefer_bytes = 256 << 20;
};

// Faults anonymous 4 KiB pages (THP off) chunk by chunk until one lands in
// the wanted placement, keeps that page and gives the rest back. The filled
// chunks also push the allocator on, which is how a page reaches ordinary
// memory past a movable zone (or CMA past ordinary memory). nullopt when
// budget_bytes ran out first.
std::optional<found_page> find_page(const page_prober &probe, const page_wish &wish,
				    size_t budget_bytes, size_t chunk_bytes = 16 << 20);

// Memory faulted in and held so that later allocations land in a wanted
// placement: a runner holds it across the cases of one placement instead of
// every case filling memory again. Children of fork() do not inherit it.
struct placement_pressure {
	std::vector<mapping> chunks;
	size_t bytes = 0;
	bool reached = false;	// the last chunk had a page in the placement
};
placement_pressure press_towards(const page_prober &probe, const page_wish &wish, size_t budget_bytes,
				 size_t chunk_bytes = 16 << 20);

// Memory faulted in and held until the page allocator's own balance sends
// movable allocations into CMA (mm/page_alloc.c __rmqueue(): from CMA once
// it holds more than half the zone's free pages), as far as budget_bytes;
// reached says whether it got there. A CMA boot's cases then find CMA
// pages by construction, not by luck.
placement_pressure press_into_cma(size_t budget_bytes, size_t chunk_bytes = 16 << 20);

// A case that found no page of its placement within its budget: a SKIP
// (unmet_need) where the boot may lack it, an error (std::runtime_error) on
// a CMA boot, which has CMA pages by construction. `what`: "page",
// "64 pages", "memfd page".
[[noreturn]] void no_page_found(placement where, size_t budget_bytes, const std::string &what,
				const std::string &hint = "boot with movablecore= or cma=");

// Anonymous pages, THP off, populated for write.
mapping populated_pages(size_t length);

} // namespace pinmatrix
