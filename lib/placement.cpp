// SPDX-License-Identifier: GPL-2.0
#include "placement.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <filesystem>
#include <limits>
#include <regex>
#include <sstream>
#include <vector>

#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "proc_pages.hpp"

#include "sys_error.hpp"

namespace pinmatrix {

namespace {

constexpr std::array<placement_traits, 3> placements = {{
	{placement::ordinary, "ordinary", true, "ZONE_NORMAL/DMA32, MIGRATE_MOVABLE or UNMOVABLE pageblock"},
	{placement::movable, "movable", false, "ZONE_MOVABLE (movablecore= / kernelcore=)"},
	{placement::cma, "cma", false, "MIGRATE_CMA pageblock (cma= / hugetlb_cma=)"},
}};

} // namespace

const placement_traits &traits(placement p)
{
	for (const auto &t : placements)
		if (t.kind == p)
			return t;
	throw std::logic_error("unknown placement");
}

std::string_view name(placement p) { return traits(p).name; }

std::optional<placement> parse_placement(std::string_view s)
{
	for (const auto &t : placements)
		if (s == t.name)
			return t.kind;
	return std::nullopt;
}

std::optional<placement> classify(const pinmatrix_page &page)
{
	if (!(page.flags & PINMATRIX_PAGE_PRESENT) || (page.flags & PINMATRIX_PAGE_ZERO))
		return std::nullopt;
	if (page.migratetype == PINMATRIX_MT_CMA)
		return placement::cma;
	if (page.zone == PINMATRIX_ZONE_MOVABLE)
		return placement::movable;
	// CONFIG_CMA and an unreadable pageblock: it may be CMA.
	if (!(page.flags & PINMATRIX_PAGE_PINNABLE_KNOWN))
		return std::nullopt;
	return placement::ordinary;
}

std::string placement_of(const pinmatrix_page &page)
{
	if (!(page.flags & PINMATRIX_PAGE_PRESENT) || (page.flags & PINMATRIX_PAGE_ZERO))
		return "absent";
	const auto p = classify(page);
	return p ? std::string(name(*p)) : "unknown";
}

std::optional<bool> longterm_pinnable(const pinmatrix_page &page)
{
	if (!(page.flags & PINMATRIX_PAGE_PRESENT) || !(page.flags & PINMATRIX_PAGE_PINNABLE_KNOWN))
		return std::nullopt;
	return bool(page.flags & PINMATRIX_PAGE_LONGTERM_PINNABLE);
}

uint64_t meminfo_bytes(std::string_view field)
{
	std::istringstream meminfo(read_text_file("/proc/meminfo"));
	const std::string want = std::string(field) + ":";
	for (std::string key; meminfo >> key;) {
		uint64_t kb = 0;
		if (key == want && meminfo >> kb)
			return kb * 1024;
		meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
	}
	return 0;
}

namespace {

bool has_cma()
{
	return meminfo_bytes("CmaTotal") > 0;
}

bool has_movable_zone()
{
	// "Node 0, zone  Movable" ... "present N"
	std::istringstream zoneinfo(read_text_file("/proc/zoneinfo"));
	bool in_movable = false;
	for (std::string line; std::getline(zoneinfo, line);) {
		if (line.rfind("Node ", 0) == 0)
			in_movable = line.find("zone  Movable") != std::string::npos;
		std::istringstream fields(line);
		std::string key;
		uint64_t n = 0;
		if (in_movable && fields >> key && key == "present" && fields >> n && n > 0)
			return true;
	}
	return false;
}

} // namespace

std::vector<placement> restricted_placements()
{
	std::vector<placement> present;
	if (has_cma())
		present.push_back(placement::cma);
	if (has_movable_zone())
		present.push_back(placement::movable);
	return present;
}

placement detect_restricted_placement()
{
	const auto present = restricted_placements();
	return present.empty() ? placement::ordinary : present.front();
}

namespace {

uint64_t read_number(const std::filesystem::path &file)
{
	return read_number_file(file).value();
}

// debugfs: cma/<name>/{base_pfn,count}; from 6.19 an area of several
// ranges has cma/<name>/ranges/<n>/{base_pfn,count} (and the old files
// for the first one, kept for compatibility).
std::vector<cma_area> cma_areas_from_debugfs()
{
	std::vector<cma_area> areas;
	std::error_code ec;
	for (const auto &dir : std::filesystem::directory_iterator("/sys/kernel/debug/cma", ec)) {
		std::vector<std::filesystem::path> ranges;
		for (const auto &r : std::filesystem::directory_iterator(dir.path() / "ranges", ec))
			ranges.push_back(r.path());
		if (ranges.empty())
			ranges.push_back(dir.path());
		for (const auto &r : ranges) {
			try {
				areas.push_back({dir.path().filename(), read_number(r / "base_pfn"),
						 read_number(r / "count"), "debugfs " + r.string()});
			} catch (const std::exception &) {
			}
		}
	}
	return areas;
}

// The boot log's "cma: Reserved <N> MiB at <phys>" lines (mm/cma.c prints
// one per area it reserves), for kernels without CMA_DEBUGFS (Debian's 7.x
// has CMA_SYSFS only, which names areas but not where they are).
std::vector<cma_area> cma_areas_from_boot_log()
{
	std::vector<cma_area> areas;
	std::string log;
	try {
		log = read_kernel_log();
	} catch (const std::exception &) {
		return areas;
	}
	static const std::regex line(R"(cma: Reserved (\d+) MiB at (0x[0-9a-fA-F]+))");
	for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
		const uint64_t mib = std::stoull((*it)[1]);
		const uint64_t phys = std::stoull((*it)[2], nullptr, 16);
		const long page = sysconf(_SC_PAGESIZE);
		areas.push_back({"reserved at " + (*it)[2].str(), phys / page, (mib << 20) / page,
				 "kernel log: \"" + it->str() + "\""});
	}
	return areas;
}

// The last resort, for kernels whose boot log names no address either (7.x
// reserves hugetlb_cma through the multi-range API: "cma: Reserved 1024 MiB
// in 1 range"): each zone that /proc/pagetypeinfo counts MIGRATE_CMA
// pageblocks in, as one range. A coarser check, and the source says so.
std::vector<cma_area> cma_areas_from_pagetypeinfo()
{
	std::vector<cma_area> areas;
	std::istringstream in(read_text_file("/proc/pagetypeinfo"));
	int cma_column = -1;
	const auto zones = read_zone_ranges();
	for (std::string line; std::getline(in, line);) {
		std::istringstream words(line);
		std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
		if (line.rfind("Number of blocks type", 0) == 0) {
			const auto it = std::find(w.begin(), w.end(), "CMA");
			cma_column = it == w.end() ? -1 : int(it - w.begin()) - 4;	// after "Number of blocks type"
			continue;
		}
		// "Node 0, zone   Normal  205  5893  622  0  512  0"
		if (cma_column < 0 || w.size() < 4 || w[0] != "Node" || w[2] != "zone" ||
		    size_t(4 + cma_column) >= w.size() || std::stoull(w[4 + cma_column]) == 0)
			continue;
		for (const auto &z : zones)
			if (z.zone == w[3] && z.node == std::atoi(w[1].c_str()))
				areas.push_back({"zone " + z.zone + " CMA pageblocks", z.start_pfn,
						 z.end_pfn - z.start_pfn,
						 "/proc/pagetypeinfo: " + w[4 + cma_column] + " MIGRATE_CMA pageblocks in zone " +
							 z.zone + " (the kernel names no area range: no CMA_DEBUGFS, no address in its boot log)",
						 false});
	}
	return areas;
}

} // namespace

std::vector<cma_area> read_cma_areas()
{
	for (auto source : {cma_areas_from_debugfs, cma_areas_from_boot_log, cma_areas_from_pagetypeinfo})
		if (auto areas = source(); !areas.empty())
			return areas;
	return {};
}

std::string cma_area_of(const std::vector<cma_area> &areas, uint64_t pfn, bool pageblock_says_cma)
{
	for (const auto &a : areas)
		if (pfn >= a.base_pfn && pfn < a.base_pfn + a.count && (a.exact || pageblock_says_cma))
			return a.name;
	return "";
}

std::string cma_area_of(const std::vector<cma_area> &areas, const pinmatrix_page &page)
{
	return cma_area_of(areas, page.pfn, page.migratetype == PINMATRIX_MT_CMA);
}

mapping populated_pages(size_t length)
{
	mapping m = mapping::anonymous(length, false);
	// 4 KiB pages as in the incident: a THP would move as one 2 MiB folio.
	m.keep_base_pages();
#ifdef MADV_POPULATE_WRITE
	if (!madvise(m.data(), m.size(), MADV_POPULATE_WRITE))
		return m;
#endif
	for (size_t off = 0; off < m.size(); off += page_size())
		m.data()[off] = std::byte{0x5a};
	return m;
}

namespace {

// The first page of the placement that the wish did not prefer: where it
// is in the filled chunks, kept whole (freeing the rest would hand the
// same memory straight back).
struct fallback_page {
	size_t chunk = 0, offset = 0, scanned = 0;
	pinmatrix_page page;
};

found_page take_fallback(std::vector<mapping> &filled, const fallback_page &f)
{
	mapping m = std::move(filled[f.chunk]);
	filled.erase(filled.begin() + ptrdiff_t(f.chunk));
	m.trim_to(f.offset, page_size());
	return found_page{std::move(m), f.page, f.scanned};
}

// Faults chunks in until one holds a page the wish wants; the chunks
// before it stay in `filled`: they are what moved the allocator on.
std::optional<found_page> fill_until(const page_prober &probe, const page_wish &wish,
				     size_t budget_bytes, size_t chunk_bytes,
				     std::vector<mapping> &filled)
{
	const size_t ps = page_size();
	chunk_bytes = std::max(ps, chunk_bytes / ps * ps);
	size_t scanned = 0;
	std::optional<fallback_page> fallback;
	while (scanned < budget_bytes && !(fallback && scanned - fallback->scanned >= wish.prefer_bytes)) {
		mapping chunk = populated_pages(std::min(chunk_bytes, budget_bytes - scanned));
		scanned += chunk.size();
		auto pages = probe.probe_pages(chunk.addr(), chunk.size() / ps);
		for (size_t i = 0; i < pages.size(); i++) {
			if (classify(pages[i]) != wish.want)
				continue;
			if (!wish.prefer || wish.prefer(pages[i].pfn)) {
				chunk.trim_to(i * ps, ps);
				return found_page{std::move(chunk), pages[i], scanned};
			}
			if (!fallback)
				fallback = fallback_page{filled.size(), i * ps, scanned, pages[i]};
		}
		filled.push_back(std::move(chunk));
	}
	if (fallback)
		return take_fallback(filled, *fallback);
	return std::nullopt;
}

} // namespace

std::optional<found_page> find_page(const page_prober &probe, const page_wish &wish,
				    size_t budget_bytes, size_t chunk_bytes)
{
	std::vector<mapping> filled;
	return fill_until(probe, wish, budget_bytes, chunk_bytes, filled);
}

placement_pressure press_towards(const page_prober &probe, const page_wish &wish, size_t budget_bytes,
				 size_t chunk_bytes)
{
	placement_pressure p;
	auto found = fill_until(probe, wish, budget_bytes, chunk_bytes, p.chunks);
	p.reached = found.has_value();
	for (auto &c : p.chunks) {
		p.bytes += c.size();
		// A child's fork() would otherwise copy page tables for all of it.
		madvise(c.data(), c.size(), MADV_DONTFORK);
	}
	return p;
}

placement_pressure press_into_cma(size_t budget_bytes, size_t chunk_bytes)
{
	placement_pressure p;
	const size_t ps = page_size();
	chunk_bytes = std::max(ps, chunk_bytes / ps * ps);
	// There once CMA holds more than half the free pages, or once what is
	// filled starts to come out of CMA (the allocator keeps the two near
	// that balance after); never past a floor of available memory.
	const uint64_t cma_free0 = meminfo_bytes("CmaFree"), floor = 128u << 20;
	auto balanced = [&] {
		const uint64_t cma_free = meminfo_bytes("CmaFree");
		return cma_free * 2 > meminfo_bytes("MemFree") || cma_free + (4u << 20) <= cma_free0;
	};
	while (!(p.reached = balanced()) && p.bytes + chunk_bytes <= budget_bytes &&
	       meminfo_bytes("MemAvailable") > floor + chunk_bytes) {
		mapping chunk = populated_pages(chunk_bytes);
		madvise(chunk.data(), chunk.size(), MADV_DONTFORK);
		p.bytes += chunk.size();
		p.chunks.push_back(std::move(chunk));
	}
	return p;
}

void no_page_found(placement where, size_t budget_bytes, const std::string &what, const std::string &hint)
{
	const std::string text = "no " + what + " in " + std::string(name(where)) + " memory within " +
				 std::to_string(budget_bytes >> 20) + " MiB";
	if (where == placement::cma)
		throw std::runtime_error(text + " on a CMA boot, where memory was filled until CMA took movable "
						"allocations: an error of the run, not a skip");
	throw unmet_need(text + " (" + hint + ")");
}

} // namespace pinmatrix
