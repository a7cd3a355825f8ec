// SPDX-License-Identifier: GPL-2.0
#pragma once

// The memory behind a registration, one kind per backing (cases/backing/):
// anonymous 4 KiB pages, a transparent huge page, hugetlbfs pages of 2 MiB
// and 1 GiB, shmem through memfd, a regular file's shared mapping on a disk
// filesystem, memfd_secret, and ranges never written (unpopulated, or only
// read: the shared zero page). Each maker returns the mapping and what
// keeps it alive; the ones that start in restricted memory look for it the
// way lib/placement.hpp does, region after region, within a budget.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mapping.hpp"
#include "page_probe.hpp"
#include "placement.hpp"
#include "unique_fd.hpp"

namespace pinmatrix::backing_cases {

enum class backing {
	anon,		// anonymous private 4 KiB pages, written
	anon_thp,	// one 2 MiB anonymous THP, written
	unpopulated,	// anonymous, never touched
	zero_page,	// anonymous, only read: every page maps the shared zero page
	hugetlb_2m,	// MAP_HUGETLB | MAP_HUGE_2MB from the 2 MiB pool
	hugetlb_1g,	// MAP_HUGETLB | MAP_HUGE_1GB from the 1 GiB pool (hugetlb_cma)
	memfd,		// shmem: memfd_create(), MAP_SHARED
	file,		// a file on a disk filesystem (O_TMPFILE), MAP_SHARED
	secretmem,	// memfd_secret(), MAP_SHARED
};
const char *name(backing b);

// Grows a hugetlb pool (/sys/kernel/mm/hugepages/hugepages-<size>kB/
// nr_hugepages) by some pages for as long as it lives, then gives them back.
class hugetlb_pool_grant {
public:
	// Throws unmet_need when the kernel has no such pool or could not grow it.
	hugetlb_pool_grant(size_t page_kib, size_t pages);
	hugetlb_pool_grant(const hugetlb_pool_grant &) = delete;
	hugetlb_pool_grant &operator=(const hugetlb_pool_grant &) = delete;
	~hugetlb_pool_grant();

private:
	std::filesystem::path file_;
	unsigned long before_ = 0;
};

struct backed_region {
	// First, so that it goes last: the pool shrinks once its pages are unmapped.
	std::shared_ptr<hugetlb_pool_grant> pool;
	mapping map;			// the region found
	size_t offset = 0;		// where in it the registration starts (the unit found)
	std::vector<mapping> others;	// the regions tried before it, held to the end
	unique_fd fd;			// memfd, file or secretmem

	static backed_region of(mapping m)
	{
		backed_region r;
		r.map = std::move(m);
		return r;
	}

	std::byte *start() const { return map.data() + offset; }
	uintptr_t start_addr() const { return map.addr() + offset; }
	size_t size() const { return map.size() - offset; }
};

struct memory_options {
	const page_prober *probe = nullptr;
	std::optional<placement> restricted;	// find the first page there; nullopt: anywhere
	bool writable_mapping = true;		// file: PROT_READ only when false
	std::filesystem::path disk_dir;		// file: a directory on a disk filesystem
	size_t budget_bytes = size_t(256) << 20;
};

// Throws unmet_need (a SKIP) when this machine cannot offer the backing:
// no THP, no hugetlb pool of the size, memfd_secret off, no disk
// filesystem, or no page of it in the restricted placement within budget.
backed_region make_backing(backing b, const memory_options &opt);

} // namespace pinmatrix::backing_cases
