// SPDX-License-Identifier: GPL-2.0
#include "backing_memory.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <vector>

#include "kernel_info.hpp"
#include "proc_pages.hpp"
#include "sys_error.hpp"

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif
#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB (30 << MAP_HUGE_SHIFT)
#endif

namespace pinmatrix::backing_cases {

namespace fs = std::filesystem;

const char *name(backing b)
{
	switch (b) {
	case backing::anon: return "anonymous 4 KiB pages";
	case backing::anon_thp: return "anonymous THP (2 MiB)";
	case backing::unpopulated: return "anonymous, never touched";
	case backing::zero_page: return "anonymous, only read (the shared zero page)";
	case backing::hugetlb_2m: return "hugetlbfs 2 MiB page";
	case backing::hugetlb_1g: return "hugetlbfs 1 GiB page";
	case backing::memfd: return "shmem (memfd)";
	case backing::file: return "regular file, MAP_SHARED";
	case backing::secretmem: return "memfd_secret";
	}
	return "?";
}

// The pool.

hugetlb_pool_grant::hugetlb_pool_grant(size_t page_kib, size_t pages)
	: file_("/sys/kernel/mm/hugepages/hugepages-" + std::to_string(page_kib) + "kB/nr_hugepages")
{
	const auto before = read_number_file(file_);
	if (!before)
		throw unmet_need("no " + std::to_string(page_kib) + " kB hugetlb pool (" + file_.string() + ")");
	before_ = static_cast<unsigned long>(*before);
	std::ofstream(file_) << before_ + pages << "\n";
	const auto now = read_number_file(file_).value_or(0);
	if (now < before_ + pages) {
		std::ofstream(file_) << before_ << "\n";
		throw unmet_need("the " + std::to_string(page_kib) + " kB hugetlb pool grew to " +
				 std::to_string(now) + " of " + std::to_string(before_ + pages) + " pages");
	}
}

hugetlb_pool_grant::~hugetlb_pool_grant()
{
	std::ofstream(file_) << before_ << "\n";
}

namespace {

struct candidate {
	mapping map;
	unique_fd fd;
};
using maker = std::function<candidate(size_t length)>;

void write_every_page(const mapping &m)
{
#ifdef MADV_POPULATE_WRITE
	if (!madvise(m.data(), m.size(), MADV_POPULATE_WRITE))
		return;
#endif
	for (size_t off = 0; off < m.size(); off += page_size())
		m.data()[off] = std::byte{0x5a};
}

bool is_thp(uintptr_t addr)
{
	const auto p = read_proc_pages(getpid(), addr, 1).at(0);
	if (!p.kpageflags)
		throw unmet_need("telling a THP apart needs /proc/kpageflags (root)");
	return *p.kpageflags >> 22 & 1;	// KPF_THP
}

// Regions from `make` until one has a unit (`unit` pages, aligned in the
// region) whose first page is in the wanted placement and that `accept`
// takes. The regions before it stay held, so that each try gets memory
// the tries before did not.
backed_region find_in_regions(const maker &make, size_t chunk, size_t unit, placement want,
			      const memory_options &opt, const std::function<bool(uintptr_t)> &accept = {})
{
	const size_t ps = page_size();
	backed_region r;
	for (size_t spent = 0; spent < opt.budget_bytes; spent += chunk) {
		candidate c = make(chunk);
		const size_t units = chunk / ps / unit;
		const auto heads = unit == 1 ? opt.probe->probe_pages(c.map.addr(), units) :
					       std::vector<pinmatrix_page>{};
		for (size_t i = 0; i < units; i++) {
			const uintptr_t at = c.map.addr() + i * unit * ps;
			const auto head = unit == 1 ? heads[i] : opt.probe->probe_page(at);
			if (classify(head) != want || (accept && !accept(at)))
				continue;
			// Not trimmed to the unit: unmapping the rest of a shared
			// file mapping lost the found page's mapping on 7.2.
			r.map = std::move(c.map);
			r.offset = i * unit * ps;
			r.fd = std::move(c.fd);
			return r;
		}
		r.others.push_back(std::move(c.map));
	}
	throw unmet_need("no " + std::to_string(unit * ps >> 10) + " KiB unit in " + std::string(name(want)) +
			 " memory within " + std::to_string(opt.budget_bytes >> 20) + " MiB");
}

candidate memfd_region(size_t length)
{
	unique_fd fd(static_cast<int>(syscall(SYS_memfd_create, "pinmatrix-backing", MFD_CLOEXEC)));
	if (fd.get() < 0)
		throw last_sys_error("memfd_create");
	if (ftruncate(fd.get(), off_t(length)))
		throw last_sys_error("ftruncate memfd");
	mapping m = mapping::map(length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
	write_every_page(m);
	return {std::move(m), std::move(fd)};
}

// A file with no name in dir (O_TMPFILE: nothing to clean up), written and
// synced, then mapped shared with its pages in the page cache.
candidate file_region(const fs::path &dir, size_t length, bool writable)
{
	unique_fd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
	if (fd.get() < 0)
		throw last_sys_error("open(O_TMPFILE) in " + dir.string());
	const std::vector<char> bytes(length, 0x5a);
	for (size_t done = 0; done < length;) {
		const ssize_t n = pwrite(fd.get(), bytes.data() + done, length - done, off_t(done));
		if (n <= 0)
			throw last_sys_error("write " + dir.string());
		done += size_t(n);
	}
	if (fdatasync(fd.get()))
		throw last_sys_error("fdatasync " + dir.string());
	const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
	return {mapping::map(length, prot, MAP_SHARED | MAP_POPULATE, fd.get()), std::move(fd)};
}

// A disk filesystem is one whose shared mappings need dirty tracking: not
// tmpfs, ramfs or hugetlbfs. Returns the bytes a search may write there:
// three quarters of what is free (the tries stay allocated until the end).
size_t require_disk_filesystem(const fs::path &dir)
{
	struct statfs st {};
	if (dir.empty() || statfs(dir.c_str(), &st))
		throw unmet_need("no directory for the file backing (" + (dir.empty() ? "none given" : dir.string()) +
				 "): set PINMATRIX_DISK_DIR to a directory on a disk filesystem");
	if (st.f_flags & ST_RDONLY)
		throw unmet_need(dir.string() + " is on a read-only filesystem (a guest without ext4 or loop has "
			       "no scratch disk): set PINMATRIX_DISK_DIR to a writable directory on a disk filesystem");
	const auto type = static_cast<unsigned long>(st.f_type);
	if (type == TMPFS_MAGIC || type == RAMFS_MAGIC || type == HUGETLBFS_MAGIC)
		throw unmet_need(dir.string() + " is on tmpfs, ramfs or hugetlbfs, whose mappings need no dirty "
			       "tracking: set PINMATRIX_DISK_DIR to a directory on a disk filesystem (ext4, xfs, ...)");
	return size_t(st.f_bavail) * size_t(st.f_bsize) / 4 * 3;
}

candidate thp_region()
{
	const size_t huge = size_t(2) << 20;
	mapping m = mapping::anonymous(2 * huge, false);
	m.trim_to((huge - m.addr() % huge) % huge, huge);
	if (madvise(m.data(), m.size(), MADV_HUGEPAGE))
		throw last_sys_error("madvise(MADV_HUGEPAGE)");
	write_every_page(m);
	return {std::move(m), {}};
}

void require_thp()
{
	if (!kernel_has_thp())
		throw unmet_need(std::string("this kernel has no transparent huge pages (no "
					     "/sys/kernel/mm/transparent_hugepage: built without "
					     "CONFIG_TRANSPARENT_HUGEPAGE") +
				 (read_kernel_info().version.find("PREEMPT_RT") != std::string::npos
					  ? "; it is a PREEMPT_RT kernel (uname -v), where THP depends on !PREEMPT_RT)"
					  : ")"));
	std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
	std::string modes;
	if (!std::getline(in, modes) || modes.find("[never]") != std::string::npos)
		throw unmet_need("transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled: " +
				 (modes.empty() ? std::string("absent") : modes) + ")");
}

backed_region hugetlb_region(size_t page_kib, size_t pages, int size_flag, const memory_options &opt)
{
	auto pool = std::make_shared<hugetlb_pool_grant>(page_kib, pages);
	const size_t unit = page_kib * 1024 / page_size();
	const maker make = [&](size_t length) {
		return candidate{mapping::map(length, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | size_flag | MAP_POPULATE),
				 {}};
	};
	memory_options one = opt;
	one.budget_bytes = pages * page_kib * 1024;	// the pool holds no more
	backed_region r = opt.restricted ? find_in_regions(make, one.budget_bytes, unit, *opt.restricted, one)
					 : backed_region::of(make(page_kib * 1024).map);
	r.pool = std::move(pool);
	return r;
}

// Memory that starts wherever the allocator puts it, or in the restricted
// placement when one is asked for.
backed_region placed(const maker &make, const memory_options &opt, size_t chunk = size_t(16) << 20)
{
	if (!opt.restricted) {
		candidate c = make(page_size());
		backed_region r;
		r.map = std::move(c.map);
		r.fd = std::move(c.fd);
		return r;
	}
	return find_in_regions(make, chunk, 1, *opt.restricted, opt);
}

backed_region secretmem_region()
{
	const long fd = syscall(SYS_memfd_secret, 0);
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		throw unmet_need("memfd_secret: " + std::string(strerrorname_np(errno)) +
				 " (no CONFIG_SECRETMEM, or 6.1 to 6.4 booted without secretmem.enable=1)");
	if (fd < 0)
		throw last_sys_error("memfd_secret");
	backed_region r;
	r.fd = unique_fd(static_cast<int>(fd));
	if (ftruncate(r.fd.get(), off_t(page_size())))
		throw last_sys_error("ftruncate memfd_secret");
	r.map = mapping::map(page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, r.fd.get());
	write_every_page(r.map);
	return r;
}

// 16 anonymous 4 KiB pages never written; read once each when `read` is set.
backed_region untouched_region(bool read)
{
	backed_region r = backed_region::of(mapping::anonymous(16 * page_size(), false));
	r.map.keep_base_pages();
	for (size_t off = 0; read && off < r.map.size(); off += page_size())
		(void)*static_cast<volatile std::byte *>(r.map.data() + off);
	return r;
}

} // namespace

backed_region make_backing(backing b, const memory_options &opt)
{
	backed_region r;
	switch (b) {
	case backing::anon:
		r = placed([](size_t n) { return candidate{populated_pages(n), {}}; }, opt);
		break;
	case backing::anon_thp:
		require_thp();
		r = opt.restricted ? find_in_regions([](size_t) { return thp_region(); }, size_t(2) << 20, 512,
						     *opt.restricted, opt, is_thp)
				   : backed_region::of(thp_region().map);
		break;
	case backing::unpopulated:
	case backing::zero_page:
		r = untouched_region(b == backing::zero_page);
		break;
	case backing::hugetlb_2m:
		r = hugetlb_region(2048, 16, MAP_HUGE_2MB, opt);
		break;
	case backing::hugetlb_1g:
		r = hugetlb_region(1024 * 1024, 1, MAP_HUGE_1GB, opt);
		break;
	case backing::memfd:
		r = placed(memfd_region, opt);
		break;
	case backing::file: {
		memory_options on_disk = opt;
		on_disk.budget_bytes = std::min(opt.budget_bytes, require_disk_filesystem(opt.disk_dir));
		r = placed([&](size_t n) { return file_region(opt.disk_dir, n, opt.writable_mapping); }, on_disk,
			   size_t(4) << 20);
		break;
	}
	case backing::secretmem:
		r = secretmem_region();
		break;
	}
	return r;
}

} // namespace pinmatrix::backing_cases
