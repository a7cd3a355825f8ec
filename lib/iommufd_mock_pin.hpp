// SPDX-License-Identifier: GPL-2.0
#pragma once

// A long-term pin through iommufd (/dev/iommu, 6.2 and later): an IOAS with
// the self-test's mock domain attached (CONFIG_IOMMUFD_TEST,
// IOMMU_TEST_OP_MOCK_DOMAIN). IOMMU_IOAS_MAP of user memory fills every
// attached domain at once: drivers/iommu/iommufd/pages.c,
// pfn_reader_user_pin() -> pin_user_pages_fast(FOLL_LONGTERM), held until
// IOMMU_IOAS_UNMAP or the file is closed.

#include <cstddef>
#include <cstdint>
#include <string>

#include "unique_fd.hpp"

namespace pinmatrix {

class iommufd_mock_pin {
public:
	// The mock domain's aperture starts here (iommufd_test.h:
	// MOCK_APERTURE_START): an IOVA below it is refused.
	static constexpr uint64_t first_iova = uint64_t(1) << 24;

	// /dev/iommu, an IOAS and a mock domain attached to it. Throws
	// unmet_need with what is missing: no iommufd (not built, not
	// loaded), no self-test (CONFIG_IOMMUFD_TEST: ENOTTY).
	static iommufd_mock_pin open();

	// "/dev/iommu (IOAS N, mock domain hwpt M)"
	const std::string &device() const { return device_; }
	// IOMMU_IOAS_MAP of [addr, addr + length) at iova (fixed, readable and
	// writable): errno, 0 when mapped (and pinned). latency_ns: the ioctl
	// alone.
	int map(void *addr, size_t length, uint64_t iova, int64_t *latency_ns);
	// IOMMU_IOAS_UNMAP of what map() mapped: the pages are unpinned.
	void unmap();
	// IOMMU_TEST_OP_MD_CHECK_MAP: 0 when the mock domain translates the
	// mapped IOVA to the page the CPU sees at addr now, else its errno
	// (EINVAL: another page).
	int device_translation_matches(void *addr, size_t length) const;

private:
	unique_fd fd_;
	std::string device_;
	uint32_t ioas_id_ = 0;
	uint32_t hwpt_id_ = 0;
	uint64_t iova_ = 0;
	size_t length_ = 0;
};

} // namespace pinmatrix
