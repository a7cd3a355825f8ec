// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <sys/types.h>

#include <cstdint>
#include <span>

namespace pinmatrix {

// A mapping (anonymous private unless made by map()), unmapped when it goes. Pages can be given
// back early with trim_to(), which keeps one page-aligned window.
class mapping {
public:
	mapping() = default;
	// populate: fault every page in for write (MAP_POPULATE).
	static mapping anonymous(size_t length, bool populate);
	// Any mmap(2) (a file, memfd, hugetlb, ...); throws sys_error on failure.
	static mapping map(size_t length, int prot, int flags, int fd = -1, off_t offset = 0);

	mapping(mapping &&o) noexcept;
	mapping &operator=(mapping &&o) noexcept;
	mapping(const mapping &) = delete;
	mapping &operator=(const mapping &) = delete;
	~mapping();

	std::byte *data() const { return base_; }
	uintptr_t addr() const { return reinterpret_cast<uintptr_t>(base_); }
	size_t size() const { return length_; }
	std::span<std::byte> bytes() const { return {base_, length_}; }

	// Unmap everything outside [offset, offset + length).
	void trim_to(size_t offset, size_t length);

	// Base pages only, never a transparent huge page (madvise
	// MADV_NOHUGEPAGE): a THP would move as one folio. A kernel built
	// without THP (PREEMPT_RT's 6.12: TRANSPARENT_HUGEPAGE depends on
	// !PREEMPT_RT) has no /sys/kernel/mm/transparent_hugepage, makes only
	// base pages, and refuses the advice with EINVAL: not an error there.
	// Throws sys_error otherwise.
	void keep_base_pages() const;

private:
	void unmap();
	std::byte *base_ = nullptr;
	size_t length_ = 0;
};

size_t page_size();

// Whether this kernel has transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE:
// /sys/kernel/mm/transparent_hugepage exists).
bool kernel_has_thp();

} // namespace pinmatrix
