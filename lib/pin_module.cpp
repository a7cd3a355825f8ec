// SPDX-License-Identifier: GPL-2.0
#include "pin_module.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "mapping.hpp"
#include "proc_pages.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace {

int ioctl_errno(int fd, unsigned long request, void *arg)
{
	return ::ioctl(fd, request, arg) ? -errno : 0;
}

int unpin_errno(int fd, uint32_t id)
{
	pinmatrix_unpin req{};
	req.size = sizeof(req);
	req.id = id;
	return ioctl_errno(fd, PINMATRIX_IOC_UNPIN, &req);
}

int probe_ioctl(int fd, uintptr_t addr, size_t npages, pinmatrix_page *out, uint32_t flags)
{
	pinmatrix_probe req{};
	req.size = sizeof(req);
	req.flags = flags;
	req.addr = addr;
	req.npages = npages;
	req.pages = reinterpret_cast<uintptr_t>(out);
	return ioctl_errno(fd, PINMATRIX_IOC_PROBE, &req);
}

// What the module reports for a page it cannot get (its pm_absent()).
pinmatrix_page absent_page()
{
	pinmatrix_page p{};
	p.zone = PINMATRIX_ZONE_UNKNOWN;
	p.migratetype = PINMATRIX_MT_UNKNOWN;
	return p;
}

// A probe that faults nothing in. The module asks GUP page by page, and an
// absent page costs it a failed GUP call; most absent pages come in long
// runs (mapped, never touched), so /proc/self/pagemap, read once, finds
// them here and only the runs of present pages go to the module. Without
// pagemap, or for a range the module must refuse, the module gets it whole.
int probe_present(int fd, uintptr_t addr, size_t npages, pinmatrix_page *out)
{
	const size_t ps = page_size();
	if (!npages || npages > PINMATRIX_PROBE_MAX_PAGES || addr % ps)
		return probe_ioctl(fd, addr, npages, out, 0);
	std::vector<uint64_t> map;
	try {
		map = read_pagemap(::getpid(), addr, npages);
	} catch (const std::system_error &) {
		return probe_ioctl(fd, addr, npages, out, 0);
	}
	for (size_t i = 0; i < npages;) {
		if (!pagemap_present(map[i])) {
			out[i++] = absent_page();
			continue;
		}
		size_t end = i + 1;
		while (end < npages && pagemap_present(map[end]))
			end++;
		if (int ret = probe_ioctl(fd, addr + i * ps, end - i, out + i, 0))
			return ret;
		i = end;
	}
	return 0;
}

} // namespace

held_pin::held_pin(held_pin &&o) noexcept
	: module_fd_(std::exchange(o.module_fd_, -1)), id_(std::exchange(o.id_, 0)),
	  pfns_(std::move(o.pfns_))
{
}

held_pin &held_pin::operator=(held_pin &&o) noexcept
{
	if (this != &o) {
		release();
		module_fd_ = std::exchange(o.module_fd_, -1);
		id_ = std::exchange(o.id_, 0);
		pfns_ = std::move(o.pfns_);
	}
	return *this;
}

held_pin::~held_pin() { release(); }

int held_pin::release()
{
	if (!id_ || module_fd_ < 0)
		return 0;
	int ret = unpin_errno(module_fd_, id_);
	id_ = 0;
	return ret;
}

pin_module pin_module::open(const std::string &path)
{
	int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		if (err == ENOENT || err == ENXIO || err == ENODEV)
			throw unmet_need(path + " is absent: install pinmatrix-dkms (DKMS builds pinmatrix.ko "
					 "for each kernel with headers, and `pinmatrix run` loads it) or give "
					 "--module PINMATRIX_KO");
		if (err == EACCES || err == EPERM)
			throw unmet_need(path + " needs root (CAP_SYS_ADMIN)");
		throw sys_error(err, "open " + path);
	}
	return pin_module(unique_fd(fd));
}

int pin_module::try_info(pinmatrix_info &info) const
{
	pinmatrix_info req{};
	req.size = sizeof(req);
	int ret = ioctl_errno(fd(), PINMATRIX_IOC_INFO, &req);
	if (!ret)
		info = req;
	return ret;
}

pinmatrix_info pin_module::info() const
{
	pinmatrix_info info{};
	if (int ret = try_info(info))
		throw sys_error(-ret, "PINMATRIX_IOC_INFO");
	return info;
}

int pin_module::try_probe_into(uintptr_t addr, size_t npages, pinmatrix_page *out,
			       uint32_t flags) const
{
	// PINMATRIX_PROBE_FAULT faults absent pages in: the module gets the
	// whole range. So do flags it does not know, for it to refuse them.
	if (flags)
		return probe_ioctl(fd(), addr, npages, out, flags);
	return probe_present(fd(), addr, npages, out);
}

int pin_module::try_probe(uintptr_t addr, size_t npages, std::vector<pinmatrix_page> &out,
			  uint32_t flags) const
{
	std::vector<pinmatrix_page> pages(npages);
	int ret = try_probe_into(addr, npages, pages.data(), flags);
	if (!ret)
		out = std::move(pages);
	return ret;
}

std::vector<pinmatrix_page> pin_module::probe(uintptr_t addr, size_t npages, uint32_t flags) const
{
	std::vector<pinmatrix_page> out;
	if (int ret = try_probe(addr, npages, out, flags))
		throw sys_error(-ret, "PINMATRIX_IOC_PROBE");
	return out;
}

int pin_module::try_pin(pinmatrix_contract contract, uintptr_t addr, size_t npages,
			uint32_t flags, held_pin &out, size_t *stopped_at) const
{
	std::vector<uint64_t> pfns(npages);
	pinmatrix_pin req{};
	req.size = sizeof(req);
	req.contract = contract;
	req.flags = flags;
	req.addr = addr;
	req.npages = npages;
	req.pfns = reinterpret_cast<uintptr_t>(pfns.data());
	req.pinned = npages;	// as is unless GUP ran
	int ret = ioctl_errno(fd(), PINMATRIX_IOC_PIN, &req);
	if (stopped_at)
		*stopped_at = size_t(std::min<uint64_t>(req.pinned, npages));
	if (ret)
		return ret;
	held_pin pin;
	pin.module_fd_ = fd();
	pin.id_ = req.id;
	pin.pfns_ = std::move(pfns);
	out = std::move(pin);
	return 0;
}

held_pin pin_module::pin(pinmatrix_contract contract, uintptr_t addr, size_t npages,
			 uint32_t flags) const
{
	held_pin pin;
	size_t stopped_at = npages;
	if (int ret = try_pin(contract, addr, npages, flags, pin, &stopped_at))
		throw sys_error(-ret, std::string("PINMATRIX_IOC_PIN ") + contract_name(contract) +
					      (stopped_at < npages ? " at page " + std::to_string(stopped_at) + " of " +
									     std::to_string(npages)
								   : std::string()));
	return pin;
}

int pin_module::try_unpin(uint32_t id) const
{
	return unpin_errno(fd(), id);
}

int pin_module::try_list(std::vector<pinmatrix_pin_info> &out) const
{
	// Ask for the count first, then for that many (pins only change through us).
	pinmatrix_list req{};
	req.size = sizeof(req);
	if (int ret = ioctl_errno(fd(), PINMATRIX_IOC_LIST, &req))
		return ret;
	std::vector<pinmatrix_pin_info> pins(req.count);
	req.pins = reinterpret_cast<uintptr_t>(pins.data());
	if (int ret = ioctl_errno(fd(), PINMATRIX_IOC_LIST, &req))
		return ret;
	pins.resize(std::min<size_t>(pins.size(), req.count));
	out = std::move(pins);
	return 0;
}

std::vector<pinmatrix_pin_info> pin_module::list() const
{
	std::vector<pinmatrix_pin_info> out;
	if (int ret = try_list(out))
		throw sys_error(-ret, "PINMATRIX_IOC_LIST");
	return out;
}

const char *zone_name(uint8_t zone)
{
	switch (zone) {
	case PINMATRIX_ZONE_DMA: return "DMA";
	case PINMATRIX_ZONE_DMA32: return "DMA32";
	case PINMATRIX_ZONE_NORMAL: return "Normal";
	case PINMATRIX_ZONE_HIGHMEM: return "HighMem";
	case PINMATRIX_ZONE_MOVABLE: return "Movable";
	case PINMATRIX_ZONE_DEVICE: return "Device";
	default: return "unknown";
	}
}

const char *migratetype_name(uint8_t mt)
{
	switch (mt) {
	case PINMATRIX_MT_UNMOVABLE: return "Unmovable";
	case PINMATRIX_MT_MOVABLE: return "Movable";
	case PINMATRIX_MT_RECLAIMABLE: return "Reclaimable";
	case PINMATRIX_MT_HIGHATOMIC: return "HighAtomic";
	case PINMATRIX_MT_CMA: return "CMA";
	case PINMATRIX_MT_ISOLATE: return "Isolate";
	default: return "unknown";
	}
}

const char *contract_name(uint32_t contract)
{
	switch (contract) {
	case PINMATRIX_CONTRACT_GUP_REF: return "FOLL_GET";
	case PINMATRIX_CONTRACT_FOLL_PIN: return "FOLL_PIN";
	case PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM: return "FOLL_PIN|FOLL_LONGTERM";
	default: return "unknown";
	}
}

const char *mt_method_name(uint32_t method)
{
	switch (method) {
	case PINMATRIX_MT_METHOD_PAGEBLOCK_BITMAP: return "pageblock-bitmap";
	default: return "none";
	}
}

page_probe_in_use open_page_probe(bool without_module)
{
	page_probe_in_use p;
	try {
		if (!without_module)
			p.module.emplace(pin_module::open());
	} catch (const unmet_need &) {
	}
	return p;
}

} // namespace pinmatrix
