// SPDX-License-Identifier: GPL-2.0
#include "boot.hpp"

#include <sstream>

#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

const std::vector<boot_placement> &boot_placements()
{
	// hugetlb_cma: on x86 the gigantic page is 1 GiB, so less reserves
	// nothing; the guest needs RAM beyond it for the fill that pushes
	// movable allocations into CMA (fallback once CMA holds more than half
	// of the zone's free pages). 4 GiB, not 3: q35 puts 2 GiB above 4 GiB,
	// so a 1 GiB-aligned GiB stays free there even when KASLR (Debian's
	// kernels) or early allocations took part of it; in a 3 GiB guest stock
	// 7.2 logged "cma: Failed to reserve 1024 MiB".
	static const std::vector<boot_placement> table = {
		{"ordinary", "", 1024, placement::ordinary, {}, "no movable zone, no CMA"},
		{"movable", "movablecore=512M", 1024, placement::movable, {},
		 "ZONE_MOVABLE of 512 MiB (stands in for CMA)"},
		{"cma", "cma=256M", 1024, placement::cma, {"CONFIG_CMA"},
		 "a 256 MiB CMA area (MIGRATE_CMA pageblocks)"},
		{"hugetlb_cma", "hugetlb_cma=1G", 4096, placement::cma,
		 {"CONFIG_CMA", "CONFIG_HUGETLB_PAGE"},
		 "a 1 GiB hugetlb CMA area, as in the incident (hugetlb_cma=6G)"},
		// Every placement in one boot, for benchmarks that compare them:
		// DMA32 (2 GiB below 4 GiB on q35) holds the CMA area, fixed at
		// 256 MiB, and more CMA than ordinary pages, so fresh movable pages
		// land in CMA (see __rmqueue()) once ZONE_MOVABLE (the top 2 GiB)
		// and ZONE_NORMAL are full. Cases find their page in ZONE_MOVABLE.
		{"all", "movablecore=2G cma=1536M@256M", 6144, placement::movable, {"CONFIG_CMA"},
		 "ordinary, a 2 GiB ZONE_MOVABLE and a 1.5 GiB CMA area in one boot (benchmarks)", true},
	};
	return table;
}

const boot_placement &find_boot_placement(std::string_view name)
{
	for (const auto &b : boot_placements())
		if (name == b.name)
			return b;
	throw usage_error("unknown boot '" + std::string(name) + "' (known: " +
			  join(boot_placements(), ", ", &boot_placement::name) + ")");
}

std::string kconfig_value(const std::string &config, const std::string &option)
{
	std::istringstream in(config);
	const std::string prefix = option + "=";
	for (std::string line; std::getline(in, line);)
		if (line.rfind(prefix, 0) == 0)
			return line.substr(prefix.size());
	return "";
}

std::optional<std::string> unmet_kconfig(const boot_placement &b, const std::string &config,
					 const std::string &release)
{
	for (const char *option : b.needs_kconfig) {
		const auto v = kconfig_value(config, option);
		if (v != "y" && v != "m")
			return std::string(b.name) + ": " + option + " is not set in " + release;
	}
	return std::nullopt;
}

} // namespace pinmatrix
