// SPDX-License-Identifier: GPL-2.0
#pragma once

// A long-term pin through VFIO type1 (drivers/vfio/vfio_iommu_type1.c):
// VFIO_IOMMU_MAP_DMA maps user memory into a device's IOMMU domain through
// vaddr_get_pfns() -> pin_user_pages_remote(FOLL_LONGTERM), held until
// VFIO_IOMMU_UNMAP_DMA or the container is closed. In a guest: QEMU's
// intel-iommu gives it IOMMU groups, and QEMU's edu device (PCI 1234:11e8)
// bound to vfio-pci is a device that really writes through the mapping:
// its DMA engine copies a pattern into the mapped page, which the CPU must
// read there (the same check as the RDMA WRITE of an MR).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "mapping.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

class vfio_type1_pin {
public:
	// The first device bound to vfio-pci, its group in a type1 container.
	// Throws unmet_need with what is missing (no IOMMU group, no device
	// bound to vfio-pci, a group that is not viable).
	static vfio_type1_pin open();

	const std::string &device() const { return bdf_; }
	bool is_edu() const { return edu_; }
	// VFIO_IOMMU_MAP_DMA of [addr, addr + length) at iova (read-write):
	// errno, 0 when mapped (and pinned). latency_ns: the ioctl alone.
	int map(void *addr, size_t length, uint64_t iova, int64_t *latency_ns);
	// VFIO_IOMMU_UNMAP_DMA of what map() mapped: the pages are unpinned.
	void unmap();
	// With a mapping held: the edu device's DMA writes length pattern
	// bytes (from seed, at most 4096) to the mapping's IOVA; same is
	// whether the CPU reads them at addr. Not an edu device: same stays
	// nullopt, detail says why.
	void device_write(void *addr, size_t length, uint64_t seed, std::optional<bool> &same,
			  std::string &detail);

private:
	int edu_dma(uint64_t src, uint64_t dst, size_t count, bool to_ram, std::string &detail);
	int region(unsigned index, uint64_t &offset);

	unique_fd container_, group_, device_;
	std::string bdf_;
	bool edu_ = false;
	uint64_t iova_ = 0;
	size_t length_ = 0;
	std::optional<mapping> source_;	// edu's DMA source, mapped at source_iova
};

} // namespace pinmatrix
