// SPDX-License-Identifier: GPL-2.0
#include "parallel_groups.hpp"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

namespace pinmatrix {

namespace {

// QEMU's own memory beside the guest's (TCG's translation cache, 9p, the
// device model), and what the host keeps for itself and the page cache.
constexpr unsigned qemu_overhead_mib = 256;
constexpr double host_share = 0.8;

unsigned long mem_available_mib()
{
	std::ifstream in("/proc/meminfo");
	std::string key;
	unsigned long kib = 0;
	while (in >> key >> kib) {
		if (key == "MemAvailable:")
			return kib / 1024;
		in.ignore(256, '\n');
	}
	return 0;
}

} // namespace

host_capacity this_host()
{
	host_capacity h;
	cpu_set_t set;
	if (!sched_getaffinity(0, sizeof(set), &set))
		h.cores = std::max(1, CPU_COUNT(&set));
	h.available_mib = mem_available_mib();
	return h;
}

unsigned guests_at_once(unsigned requested, const std::vector<unsigned> &group_memory_mib,
			const std::vector<unsigned> &group_cpus, const host_capacity &host, std::string &why)
{
	const unsigned groups = unsigned(group_memory_mib.size());
	if (requested) {
		why = "--jobs " + std::to_string(requested);
		return std::max(1u, std::min(requested, groups));
	}
	const unsigned memory = group_memory_mib.empty()
					? 0
					: *std::max_element(group_memory_mib.begin(), group_memory_mib.end());
	const unsigned cpus = group_cpus.empty() ? 1 : *std::max_element(group_cpus.begin(), group_cpus.end());
	const unsigned by_cores = std::max(1u, host.cores / std::max(1u, cpus));
	const unsigned by_memory =
		host.available_mib ? unsigned(host.available_mib * host_share / (memory + qemu_overhead_mib)) : 1;
	const unsigned n = std::max(1u, std::min({groups, by_cores, by_memory}));
	std::ostringstream s;
	s << host.cores << (host.cores == 1 ? " core" : " cores") << ", " << host.available_mib
	  << " MiB available, at most " << memory << " MiB and " << cpus << (cpus == 1 ? " vCPU" : " vCPUs")
	  << " a guest";
	why = s.str();
	return n;
}

void say_line(const std::string &line)
{
	static std::mutex lines;
	std::lock_guard lock(lines);
	std::cout << line << std::endl;
}

} // namespace pinmatrix
