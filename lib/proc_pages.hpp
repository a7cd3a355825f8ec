// SPDX-License-Identifier: GPL-2.0
#pragma once

// Where another process's pages live, without the test module (which only
// ever probes its caller's own memory): /proc/PID/maps for the mapping,
// /proc/PID/pagemap for the PFN (zero unless CAP_SYS_ADMIN), /proc/kpageflags
// and /proc/kpagecount for the page, /proc/zoneinfo for the zone a PFN is
// in, the debugfs CMA areas for MIGRATE_CMA. Also the memlock state of a
// process and the machine's free memory: what `pinmatrix explain` and the
// registration telemetry read.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "placement.hpp"

namespace pinmatrix {

struct vma {
	uint64_t start = 0, end = 0;
	std::string perms;	// "rw-p"
	uint64_t offset = 0, inode = 0;
	std::string path;	// "", "[heap]", "/dev/infiniband/uverbs0", a file
};
// Throws sys_error (ESRCH for a pid that is gone, EACCES, ...).
std::vector<vma> read_maps(pid_t pid);
// The mappings overlapping [addr, addr + length).
std::vector<vma> mappings_of(const std::vector<vma> &maps, uint64_t addr, uint64_t length);
// "host anonymous", "host heap (anonymous)", "host stack", "shared memory",
// "device mapping /dev/...", "file-backed /path", as section 17 names the
// allocation class of host memory.
std::string allocation_class(const vma &m);

struct zone_range {
	int node = 0;
	std::string zone;	// "DMA32", "Normal", "Movable"
	uint64_t start_pfn = 0, end_pfn = 0;	// end exclusive (start + spanned)
};
std::vector<zone_range> read_zone_ranges();
// The zone spanning pfn ("" when none does; the first when spans overlap).
std::string zone_of_pfn(const std::vector<zone_range> &zones, uint64_t pfn);

// Raw /proc/PID/pagemap entries of [addr, addr + npages pages), read with one
// pread (Documentation/admin-guide/mm/pagemap.rst). Throws sys_error when
// pagemap cannot be opened or read, ESRCH when the process is gone.
std::vector<uint64_t> read_pagemap(pid_t pid, uint64_t addr, size_t npages);
inline bool pagemap_present(uint64_t entry) { return entry >> 63 & 1; }
inline bool pagemap_swapped(uint64_t entry) { return entry >> 62 & 1; }
// 0 unless the reader has CAP_SYS_ADMIN, or when not present.
inline uint64_t pagemap_pfn(uint64_t entry) { return entry & ((uint64_t(1) << 55) - 1); }

struct proc_page {
	uint64_t address = 0;
	bool present = false, swapped = false;
	std::optional<uint64_t> pfn;		// absent without CAP_SYS_ADMIN or not present
	std::string zone;			// from the PFN
	std::string cma_area;			// the debugfs CMA area holding the PFN
	std::optional<uint64_t> kpageflags;	// /proc/kpageflags (root)
	std::optional<uint64_t> mapcount;	// /proc/kpagecount (root)
	// Known when the PFN is: ZONE_MOVABLE and MIGRATE_CMA are not
	// (CMA taken from the areas: pageblocks of an area are MIGRATE_CMA).
	std::optional<bool> longterm_pinnable;
};
// Pages of [addr, addr + npages pages) of process pid. Throws sys_error when
// pagemap cannot be read at all.
std::vector<proc_page> read_proc_pages(pid_t pid, uint64_t addr, size_t npages);
// "anon|lru|mmap|thp", from KPF_* bits.
std::string kpageflags_text(uint64_t flags);

struct process_memlock {
	bool known = false;
	std::string name;			// comm
	std::optional<uint64_t> soft, hard;	// RLIMIT_MEMLOCK bytes; nullopt: unlimited
	bool cap_ipc_lock = false;
	uint64_t vm_pin_kb = 0, vm_lck_kb = 0;
};
// /proc/PID/status and /proc/PID/limits; known == false when unreadable.
process_memlock read_process_memlock(pid_t pid);

struct memory_state {
	std::optional<uint64_t> mem_available;	// bytes
	std::optional<uint64_t> min_free;	// bytes (vm.min_free_kbytes)
};
memory_state read_memory_state();

} // namespace pinmatrix
