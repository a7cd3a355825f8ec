// SPDX-License-Identifier: GPL-2.0
#include "mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "sys_error.hpp"

namespace pinmatrix {

size_t page_size()
{
	static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	return size;
}

bool kernel_has_thp()
{
	static const bool has = access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0;
	return has;
}

void mapping::keep_base_pages() const
{
	if (madvise(base_, length_, MADV_NOHUGEPAGE) && !(errno == EINVAL && !kernel_has_thp()))
		throw last_sys_error("madvise(MADV_NOHUGEPAGE)");
}

mapping mapping::anonymous(size_t length, bool populate)
{
	return map(length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0));
}

mapping mapping::map(size_t length, int prot, int flags, int fd, off_t offset)
{
	void *p = mmap(nullptr, length, prot, flags, fd, offset);
	if (p == MAP_FAILED)
		throw last_sys_error("mmap " + std::to_string(length) + " bytes");
	mapping m;
	m.base_ = static_cast<std::byte *>(p);
	m.length_ = length;
	return m;
}

mapping::mapping(mapping &&o) noexcept
	: base_(std::exchange(o.base_, nullptr)), length_(std::exchange(o.length_, 0))
{
}

mapping &mapping::operator=(mapping &&o) noexcept
{
	if (this != &o) {
		unmap();
		base_ = std::exchange(o.base_, nullptr);
		length_ = std::exchange(o.length_, 0);
	}
	return *this;
}

mapping::~mapping() { unmap(); }

void mapping::unmap()
{
	if (base_)
		munmap(base_, length_);
	base_ = nullptr;
	length_ = 0;
}

void mapping::trim_to(size_t offset, size_t length)
{
	if (offset % page_size() || length % page_size() || offset + length > length_)
		throw sys_error(EINVAL, "mapping::trim_to outside the mapping");
	if (offset && munmap(base_, offset))
		throw last_sys_error("munmap head");
	size_t tail = length_ - offset - length;
	if (tail && munmap(base_ + offset + length, tail))
		throw last_sys_error("munmap tail");
	base_ += offset;
	length_ = length;
}

} // namespace pinmatrix
