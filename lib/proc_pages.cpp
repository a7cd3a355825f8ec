// SPDX-License-Identifier: GPL-2.0
#include "proc_pages.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "kernel_info.hpp"
#include "mapping.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

namespace {

std::string proc(pid_t pid, const char *what)
{
	return "/proc/" + std::to_string(pid) + "/" + what;
}

bool pread_u64(int fd, uint64_t index, uint64_t &out)
{
	return ::pread(fd, &out, sizeof(out), off_t(index * sizeof(out))) == ssize_t(sizeof(out));
}

} // namespace

std::vector<vma> read_maps(pid_t pid)
{
	std::ifstream in(proc(pid, "maps"));
	if (!in)
		throw last_sys_error("open " + proc(pid, "maps"));
	std::vector<vma> out;
	for (std::string line; std::getline(in, line);) {
		std::istringstream f(line);
		vma m;
		std::string range, dev;
		if (!(f >> range >> m.perms >> std::hex >> m.offset >> dev >> std::dec >> m.inode))
			continue;
		const size_t dash = range.find('-');
		if (dash == std::string::npos)
			continue;
		m.start = std::stoull(range.substr(0, dash), nullptr, 16);
		m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
		std::getline(f, m.path);
		const size_t p = m.path.find_first_not_of(' ');
		m.path = p == std::string::npos ? "" : m.path.substr(p);
		out.push_back(m);
	}
	// A pid that exited between open and read gives an empty file.
	if (out.empty() && ::access(proc(pid, "status").c_str(), F_OK))
		throw sys_error(ESRCH, "pid " + std::to_string(pid));
	return out;
}

std::vector<vma> mappings_of(const std::vector<vma> &maps, uint64_t addr, uint64_t length)
{
	std::vector<vma> out;
	for (const auto &m : maps)
		if (m.start < addr + length && addr < m.end)
			out.push_back(m);
	return out;
}

std::string allocation_class(const vma &m)
{
	const bool shared = m.perms.size() >= 4 && m.perms[3] == 's';
	if (m.path.empty())
		return shared ? "shared memory (anonymous)" : "host anonymous";
	if (m.path == "[heap]")
		return "host heap (anonymous)";
	if (m.path.rfind("[stack", 0) == 0)
		return "host stack";
	if (m.path.rfind("/dev/", 0) == 0)
		return "device mapping " + m.path;
	if (m.path.rfind("/memfd:", 0) == 0 || m.path.rfind("/dev/shm/", 0) == 0 || m.path.rfind("/SYSV", 0) == 0)
		return "shared memory " + m.path;
	if (m.path.front() == '[')
		return "special mapping " + m.path;
	return "file-backed " + m.path;
}

std::vector<zone_range> read_zone_ranges()
{
	std::vector<zone_range> out;
	std::istringstream in(read_text_file("/proc/zoneinfo"));
	zone_range cur;
	bool have = false;
	uint64_t spanned = 0;
	auto flush = [&] {
		if (have && spanned) {
			cur.end_pfn = cur.start_pfn + spanned;
			out.push_back(cur);
		}
		have = false;
		spanned = 0;
	};
	for (std::string line; std::getline(in, line);) {
		if (line.rfind("Node ", 0) == 0) {
			flush();
			// "Node 0, zone   Normal"
			cur = {};
			cur.node = std::atoi(line.c_str() + 5);
			const size_t z = line.find("zone");
			if (z != std::string::npos) {
				std::istringstream rest(line.substr(z + 4));
				rest >> cur.zone;
				have = true;
			}
			continue;
		}
		std::istringstream f(line);
		std::string key;
		f >> key;
		if (key == "spanned")
			f >> spanned;
		else if (key == "start_pfn:")
			f >> cur.start_pfn;
	}
	flush();
	return out;
}

std::string zone_of_pfn(const std::vector<zone_range> &zones, uint64_t pfn)
{
	for (const auto &z : zones)
		if (pfn >= z.start_pfn && pfn < z.end_pfn)
			return z.zone;
	return "";
}

std::vector<uint64_t> read_pagemap(pid_t pid, uint64_t addr, size_t npages)
{
	const uint64_t ps = page_size();
	unique_fd pagemap(::open(proc(pid, "pagemap").c_str(), O_RDONLY | O_CLOEXEC));
	if (!pagemap)
		throw last_sys_error("open " + proc(pid, "pagemap"));
	std::vector<uint64_t> entries(npages);
	const size_t want = npages * sizeof(uint64_t);
	const ssize_t got = ::pread(pagemap.get(), entries.data(), want, off_t(addr / ps * sizeof(uint64_t)));
	if (got == ssize_t(want))
		return entries;
	// A process that exited reads as an empty pagemap.
	if (got >= 0 && (::access(proc(pid, "status").c_str(), F_OK) || read_text_file(proc(pid, "maps")).empty()))
		throw sys_error(ESRCH, "pid " + std::to_string(pid) + " exited before its pages could be read");
	// Short: the range runs past the end of user space.
	throw got < 0 ? last_sys_error("read " + proc(pid, "pagemap"))
		      : sys_error(EFAULT, "read " + proc(pid, "pagemap") + ": range past user space");
}

std::vector<proc_page> read_proc_pages(pid_t pid, uint64_t addr, size_t npages)
{
	const uint64_t ps = page_size();
	const auto entries = read_pagemap(pid, addr, npages);
	unique_fd flags(::open("/proc/kpageflags", O_RDONLY | O_CLOEXEC));
	unique_fd count(::open("/proc/kpagecount", O_RDONLY | O_CLOEXEC));
	const auto zones = read_zone_ranges();
	const auto areas = read_cma_areas();

	std::vector<proc_page> out;
	for (size_t i = 0; i < npages; i++) {
		proc_page p;
		p.address = addr / ps * ps + i * ps;
		const uint64_t entry = entries[i];
		p.present = pagemap_present(entry);
		p.swapped = pagemap_swapped(entry);
		const uint64_t pfn = pagemap_pfn(entry);
		if (p.present && pfn) {
			p.pfn = pfn;
			p.zone = zone_of_pfn(zones, pfn);
			p.cma_area = cma_area_of(areas, pfn);
			if (!p.zone.empty())
				p.longterm_pinnable = p.zone != "Movable" && p.cma_area.empty();
			uint64_t v = 0;
			if (flags && pread_u64(flags.get(), pfn, v))
				p.kpageflags = v;
			if (count && pread_u64(count.get(), pfn, v))
				p.mapcount = v;
		}
		out.push_back(p);
	}
	return out;
}

std::string kpageflags_text(uint64_t flags)
{
	// include/uapi/linux/kernel-page-flags.h (and KPF_MLOCKED, 33).
	static const std::pair<int, const char *> names[] = {
		{0, "locked"},	  {4, "dirty"},	   {5, "lru"},	     {6, "active"},	{10, "buddy"},
		{11, "mmap"},	  {12, "anon"},	   {13, "swapcache"}, {14, "swapbacked"}, {15, "compound_head"},
		{16, "compound_tail"}, {17, "huge"}, {18, "unevictable"}, {19, "hwpoison"}, {20, "nopage"},
		{21, "ksm"},	  {22, "thp"},	   {23, "offline"},  {24, "zero_page"}, {33, "mlocked"}};
	std::vector<std::string_view> set;
	for (const auto &[bit, name] : names)
		if (flags >> bit & 1)
			set.push_back(name);
	return set.empty() ? "-" : join(set, "|");
}

process_memlock read_process_memlock(pid_t pid)
{
	process_memlock m;
	std::ifstream status(proc(pid, "status"));
	if (!status)
		return m;
	for (std::string line; std::getline(status, line);) {
		std::istringstream f(line);
		std::string key;
		f >> key;
		if (key == "Name:")
			f >> m.name;
		else if (key == "VmPin:")
			f >> m.vm_pin_kb;
		else if (key == "VmLck:")
			f >> m.vm_lck_kb;
		else if (key == "CapEff:") {
			std::string hex;
			f >> hex;
			m.cap_ipc_lock = std::stoull(hex, nullptr, 16) & (1ULL << 14);
		}
	}
	std::ifstream limits(proc(pid, "limits"));
	for (std::string line; std::getline(limits, line);) {
		if (line.rfind("Max locked memory", 0) != 0)
			continue;
		std::istringstream f(line.substr(17));
		std::string soft, hard;
		f >> soft >> hard;
		auto value = [](const std::string &s) -> std::optional<uint64_t> {
			if (s == "unlimited")
				return std::nullopt;
			return std::stoull(s);
		};
		m.soft = value(soft);
		m.hard = value(hard);
		m.known = true;
	}
	return m;
}

memory_state read_memory_state()
{
	memory_state s;
	std::istringstream meminfo(read_text_file("/proc/meminfo"));
	for (std::string key; meminfo >> key;) {
		uint64_t kb = 0;
		meminfo >> kb;
		if (key == "MemAvailable:")
			s.mem_available = kb * 1024;
		std::string unit;
		std::getline(meminfo, unit);
	}
	const std::string min_free = read_text_file("/proc/sys/vm/min_free_kbytes");
	if (!min_free.empty())
		s.min_free = std::stoull(min_free) * 1024;
	return s;
}

} // namespace pinmatrix
