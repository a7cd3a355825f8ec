// SPDX-License-Identifier: GPL-2.0
#include "vfio_type1_pin.hpp"

#include <fcntl.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "byte_pattern.hpp"
#include "clock.hpp"
#include "kernel_info.hpp"
#include "placement.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

// QEMU's edu device (hw/misc/edu.c): its DMA registers in BAR0 and its
// 4 KiB buffer at DMA_START in its own address space. Its DMA mask is 28
// bits: both IOVAs below 256 MiB.
constexpr uint64_t edu_dma_src = 0x80, edu_dma_dst = 0x88, edu_dma_count = 0x90, edu_dma_cmd = 0x98;
constexpr uint64_t edu_buffer = 0x40000, edu_buffer_size = 4096;
constexpr size_t edu_dma_piece = edu_buffer_size / 2;
constexpr uint64_t edu_run = 0x1, edu_to_ram = 0x2;
constexpr uint64_t source_iova = 0x100000;

const fs::path vfio_pci = "/sys/bus/pci/drivers/vfio-pci";

std::optional<std::string> first_vfio_device()
{
	std::optional<std::string> found;
	if (fs::exists(vfio_pci))
		for (const auto &e : fs::directory_iterator(vfio_pci)) {
			const std::string name = e.path().filename().string();
			if (name.find(':') != std::string::npos && (!found || name < *found))
				found = name;
		}
	return found;
}

bool is_edu_device(const std::string &bdf)
{
	const fs::path dev = fs::path("/sys/bus/pci/devices") / bdf;
	return read_text_file(dev / "vendor").starts_with("0x1234") &&
	       read_text_file(dev / "device").starts_with("0x11e8");
}

unique_fd open_or_unmet(const std::string &path)
{
	unique_fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
	if (!fd)
		throw unmet_need("open " + path + ": " + errno_text(errno));
	return fd;
}

void ioctl_or_unmet(int fd, unsigned long request, const void *arg, const std::string &what)
{
	if (ioctl(fd, request, arg))
		throw unmet_need(what + ": " + errno_text(errno));
}

} // namespace

vfio_type1_pin vfio_type1_pin::open()
{
	const fs::path groups = "/sys/kernel/iommu_groups";
	if (!fs::exists(groups) || fs::is_empty(groups))
		throw unmet_need("no IOMMU group (/sys/kernel/iommu_groups is empty: no IOMMU here; a QEMU guest "
				 "needs a virtual IOMMU such as -device intel-iommu), so VFIO type1 has nothing to map "
				 "through");
	const auto bdf = first_vfio_device();
	if (!bdf)
		throw unmet_need("no device bound to vfio-pci (IOMMU groups exist; vfio-pci " +
				 std::string(fs::exists("/sys/module/vfio_pci") ? "loaded" : "not loaded") + ")");
	vfio_type1_pin p;
	p.bdf_ = *bdf;
	p.edu_ = is_edu_device(*bdf);
	const std::string group = fs::read_symlink(fs::path("/sys/bus/pci/devices") / *bdf / "iommu_group")
					  .filename()
					  .string();
	p.container_ = open_or_unmet("/dev/vfio/vfio");
	if (ioctl(p.container_.get(), VFIO_GET_API_VERSION) != VFIO_API_VERSION)
		throw unmet_need("/dev/vfio/vfio: not VFIO API version " + std::to_string(VFIO_API_VERSION));
	const int type = ioctl(p.container_.get(), VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0 ? VFIO_TYPE1v2_IOMMU
												  : VFIO_TYPE1_IOMMU;
	p.group_ = open_or_unmet("/dev/vfio/" + group);
	vfio_group_status status{.argsz = sizeof(status), .flags = 0};
	ioctl_or_unmet(p.group_.get(), VFIO_GROUP_GET_STATUS, &status, "VFIO_GROUP_GET_STATUS of group " + group);
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE))
		throw unmet_need("IOMMU group " + group + " of " + *bdf +
				 " is not viable (a device in it is bound to another driver)");
	const int container = p.container_.get();
	ioctl_or_unmet(p.group_.get(), VFIO_GROUP_SET_CONTAINER, &container, "VFIO_GROUP_SET_CONTAINER");
	if (ioctl(p.container_.get(), VFIO_SET_IOMMU, type))
		throw unmet_need("VFIO_SET_IOMMU (type1): " + errno_text(errno));
	p.device_ = unique_fd(ioctl(p.group_.get(), VFIO_GROUP_GET_DEVICE_FD, bdf->c_str()));
	if (!p.device_)
		throw unmet_need("VFIO_GROUP_GET_DEVICE_FD " + *bdf + ": " + errno_text(errno));
	return p;
}

int vfio_type1_pin::map(void *addr, size_t length, uint64_t iova, int64_t *latency_ns)
{
	unmap();
	vfio_iommu_type1_dma_map map{};
	map.argsz = sizeof(map);
	map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	map.vaddr = reinterpret_cast<uintptr_t>(addr);
	map.iova = iova;
	map.size = length;
	const int64_t t0 = monotonic_raw_ns();
	const int err = ioctl(container_.get(), VFIO_IOMMU_MAP_DMA, &map) ? errno : 0;
	if (latency_ns)
		*latency_ns = monotonic_raw_ns() - t0;
	if (!err) {
		iova_ = iova;
		length_ = length;
	}
	return err;
}

void vfio_type1_pin::unmap()
{
	if (!length_)
		return;
	vfio_iommu_type1_dma_unmap unmap{};
	unmap.argsz = sizeof(unmap);
	unmap.iova = iova_;
	unmap.size = length_;
	ioctl(container_.get(), VFIO_IOMMU_UNMAP_DMA, &unmap);
	length_ = 0;
}

int vfio_type1_pin::region(unsigned index, uint64_t &offset)
{
	vfio_region_info info{};
	info.argsz = sizeof(info);
	info.index = index;
	if (ioctl(device_.get(), VFIO_DEVICE_GET_REGION_INFO, &info))
		return errno;
	offset = info.offset;
	return 0;
}

// One DMA of the edu device, started and waited for (its engine runs on a
// 100 ms timer of the guest's clock): RAM -> its buffer, or back.
int vfio_type1_pin::edu_dma(uint64_t src, uint64_t dst, size_t count, bool to_ram, std::string &detail)
{
	uint64_t bar = 0;
	if (int err = region(VFIO_PCI_BAR0_REGION_INDEX, bar)) {
		detail = "VFIO_DEVICE_GET_REGION_INFO (BAR0) " + errno_name(err);
		return err;
	}
	const uint64_t regs[][2] = {{edu_dma_src, src},
				    {edu_dma_dst, dst},
				    {edu_dma_count, count},
				    {edu_dma_cmd, edu_run | (to_ram ? edu_to_ram : 0)}};
	for (const auto &[reg, value] : regs)
		if (pwrite(device_.get(), &value, sizeof(value), off_t(bar + reg)) != sizeof(value)) {
			detail = "edu register write " + errno_name(errno);
			return errno;
		}
	const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
	uint64_t cmd = edu_run;
	while ((cmd & edu_run) && std::chrono::steady_clock::now() < until) {
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		if (pread(device_.get(), &cmd, sizeof(cmd), off_t(bar + edu_dma_cmd)) != sizeof(cmd))
			cmd = edu_run;
	}
	if (cmd & edu_run) {
		detail = "edu DMA still running after 5 s";
		return ETIMEDOUT;
	}
	return 0;
}

void vfio_type1_pin::device_write(void *addr, size_t length, uint64_t seed, std::optional<bool> &same,
				  std::string &detail)
{
	if (!edu_) {
		detail = "no device write: " + bdf_ + " is not QEMU's edu device";
		return;
	}
	if (!length_ || length > edu_buffer_size || length > length_) {
		detail = "no device write: nothing mapped, or more than the mapping or edu's 4 KiB source";
		return;
	}
	uint64_t config = 0;
	uint16_t command = 0;
	if (region(VFIO_PCI_CONFIG_REGION_INDEX, config) ||
	    pread(device_.get(), &command, sizeof(command), off_t(config + PCI_COMMAND)) != sizeof(command)) {
		detail = "PCI command register of " + bdf_ + " unreadable";
		same = false;
		return;
	}
	command |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(device_.get(), &command, sizeof(command), off_t(config + PCI_COMMAND)) != sizeof(command)) {
		detail = "PCI command register of " + bdf_ + " not writable: no bus mastering for the DMA";
		same = false;
		return;
	}
	if (!source_)
		source_ = populated_pages(edu_buffer_size);
	fill_pattern(source_->data(), length, seed);
	vfio_iommu_type1_dma_map map{};
	map.argsz = sizeof(map);
	map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	map.vaddr = source_->addr();
	map.iova = source_iova;
	map.size = edu_buffer_size;
	if (ioctl(container_.get(), VFIO_IOMMU_MAP_DMA, &map)) {
		same = false;
		detail = "VFIO_IOMMU_MAP_DMA of the DMA source " + errno_name(errno);
		return;
	}
	// In pieces of half edu's buffer: its range check refuses (and QEMU
	// 7.2 aborts the guest on) a DMA that reaches the buffer's last byte.
	bool moved = true;
	for (size_t at = 0; moved && at < length; at += edu_dma_piece) {
		const size_t n = std::min(edu_dma_piece, length - at);
		moved = !edu_dma(source_iova + at, edu_buffer, n, false, detail) &&
			!edu_dma(edu_buffer, iova_ + at, n, true, detail);
	}
	vfio_iommu_type1_dma_unmap unmap{.argsz = sizeof(unmap), .flags = 0, .iova = source_iova,
					 .size = edu_buffer_size};
	ioctl(container_.get(), VFIO_IOMMU_UNMAP_DMA, &unmap);
	if (!moved) {
		same = false;
		return;
	}
	same = !std::memcmp(addr, source_->data(), length);
	detail = *same ? std::to_string(length) + " bytes written by the edu device's DMA through the IOMMU, read back "
						  "by the CPU"
		       : "CPU read differs from what the edu device's DMA wrote through the IOMMU";
}

} // namespace pinmatrix
