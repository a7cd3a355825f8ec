// SPDX-License-Identifier: GPL-2.0
#pragma once

// The second pin of a case: a long-term pin that must migrate the page out
// of ZONE_MOVABLE or CMA before it holds it (--second-pin):
//   ibv_reg_mr  ib_umem_get -> pin_user_pages_fast(FOLL_LONGTERM), on an RDMA
//               device; checked by a loopback RDMA WRITE the CPU reads back
//   io_uring    IORING_REGISTER_BUFFERS -> pin_user_pages(FOLL_LONGTERM), no
//               device, no module; checked by a READ_FIXED the kernel does
//               through the fixed buffer, read back by the CPU
//   vfio-type1  VFIO_IOMMU_MAP_DMA -> pin_user_pages_remote(FOLL_LONGTERM),
//               for a device bound to vfio-pci; checked by the DMA of QEMU's
//               edu device through the IOMMU, read back by the CPU

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace pinmatrix {

struct second_pin_result {
	int err = 0;		// errno, 0 on success
	int64_t latency_ns = 0;	// the pinning call alone, CLOCK_MONOTONIC_RAW
};

class second_pinner {
public:
	virtual ~second_pinner() = default;
	virtual std::string name() const = 0;	// "ibv_reg_mr" | "io_uring" | "vfio-type1"
	virtual std::string device() const = 0;	// "rxe0", "mlx5_0", a PCI address; "" for io_uring
	virtual const char *readback_method() const = 0;
	// Takes the pin on [addr, addr + length) and holds it (replacing the
	// one held) until release().
	virtual second_pin_result take(void *addr, size_t length) = 0;
	// With the pin held: length pattern bytes (from seed) are written
	// through the pin's translation; the CPU must read them at addr.
	virtual void readback(void *addr, size_t length, uint64_t seed, std::optional<bool> &same,
			      std::string &detail) = 0;
	virtual void release() = 0;
};

// Throws unmet_need when it cannot run here (no RDMA device, io_uring off),
// usage_error for an unknown name.
std::unique_ptr<second_pinner> open_second_pinner(const std::string &name, const std::string &device);

} // namespace pinmatrix
