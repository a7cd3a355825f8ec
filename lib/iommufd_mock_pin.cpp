// SPDX-License-Identifier: GPL-2.0
#include "iommufd_mock_pin.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cerrno>

#include "clock.hpp"
#include "kernel_info.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix {

namespace {

// iommufd's ABI, as include/uapi/linux/iommufd.h (6.2 on) and the
// self-test's drivers/iommu/iommufd/iommufd_test.h have it, the same on
// 6.12 and 7.2: the build host's linux-libc-dev (6.1) has neither. Every
// command leads with its size, and the kernel accepts a larger one whose
// extra bytes are zero.
constexpr unsigned long iommufd_command(unsigned nr)
{
	return _IO(';', nr);
}
constexpr unsigned long ioas_alloc_cmd = iommufd_command(0x81);
constexpr unsigned long ioas_map_cmd = iommufd_command(0x85);
constexpr unsigned long ioas_unmap_cmd = iommufd_command(0x86);
constexpr unsigned long test_cmd = iommufd_command(0x80 + 32);

struct ioas_alloc {
	uint32_t size, flags, out_ioas_id;
};
static_assert(sizeof(ioas_alloc) == 12);

enum : uint32_t { map_fixed_iova = 1 << 0, map_writeable = 1 << 1, map_readable = 1 << 2 };

struct ioas_map {
	uint32_t size, flags, ioas_id, reserved;
	uint64_t user_va, length, iova;
};
static_assert(sizeof(ioas_map) == 40);

struct ioas_unmap {
	uint32_t size, ioas_id;
	uint64_t iova, length;
};
static_assert(sizeof(ioas_unmap) == 24);

enum : uint32_t { test_op_mock_domain = 2, test_op_md_check_map = 3 };

// struct iommu_test_cmd: 72 bytes on 6.12 and 7.2, and the kernel refuses
// (EINVAL) one shorter than its `last` field's end (68); it takes a longer
// one whose extra bytes are zero. 128 leaves room for the union to grow.
struct test_command {
	uint32_t size, op, id, reserved;
	union {
		struct {
			uint32_t out_stdev_id, out_hwpt_id, out_idev_id;
		} mock_domain;
		struct {
			uint64_t iova, length, uptr;
		} check_map;
		uint64_t words[14];
	};
};
static_assert(sizeof(test_command) == 128);

std::string why_no_iommufd()
{
	const std::string state = module_state("iommufd", "drivers/iommu/iommufd");
	if (state == "not built")
		return "no /dev/iommu: this kernel has no iommufd (CONFIG_IOMMUFD not set), so no self-test mock "
		       "domain (CONFIG_IOMMUFD_TEST)";
	return "no /dev/iommu (iommufd " + state + ": " + errno_text(errno) + ")";
}

} // namespace

iommufd_mock_pin iommufd_mock_pin::open()
{
	iommufd_mock_pin p;
	p.fd_ = unique_fd(::open("/dev/iommu", O_RDWR | O_CLOEXEC));
	if (!p.fd_)
		throw unmet_need(why_no_iommufd());
	ioas_alloc alloc{sizeof(alloc), 0, 0};
	if (ioctl(p.fd_.get(), ioas_alloc_cmd, &alloc))
		throw unmet_need("IOMMU_IOAS_ALLOC on /dev/iommu: " + errno_text(errno));
	p.ioas_id_ = alloc.out_ioas_id;
	test_command mock{};
	mock.size = sizeof(mock);
	mock.op = test_op_mock_domain;
	mock.id = p.ioas_id_;
	if (ioctl(p.fd_.get(), test_cmd, &mock))
		throw unmet_need(errno == ENOTTY
			? "this kernel has no iommufd self-test mock domain (CONFIG_IOMMUFD_TEST): IOMMU_TEST_CMD "
			  "answers ENOTTY"
			: "IOMMU_TEST_OP_MOCK_DOMAIN on /dev/iommu: " + errno_text(errno));
	p.hwpt_id_ = mock.mock_domain.out_hwpt_id;
	p.device_ = "/dev/iommu (IOAS " + std::to_string(p.ioas_id_) + ", mock domain hwpt " +
		    std::to_string(p.hwpt_id_) + ")";
	return p;
}

int iommufd_mock_pin::map(void *addr, size_t length, uint64_t iova, int64_t *latency_ns)
{
	unmap();
	ioas_map m{sizeof(m), map_fixed_iova | map_writeable | map_readable, ioas_id_, 0,
		   reinterpret_cast<uintptr_t>(addr), length, iova};
	const int64_t t0 = monotonic_raw_ns();
	const int err = ioctl(fd_.get(), ioas_map_cmd, &m) ? errno : 0;
	if (latency_ns)
		*latency_ns = monotonic_raw_ns() - t0;
	if (!err) {
		iova_ = iova;
		length_ = length;
	}
	return err;
}

void iommufd_mock_pin::unmap()
{
	if (!length_)
		return;
	ioas_unmap u{sizeof(u), ioas_id_, iova_, length_};
	ioctl(fd_.get(), ioas_unmap_cmd, &u);
	length_ = 0;
}

int iommufd_mock_pin::device_translation_matches(void *addr, size_t length) const
{
	test_command check{};
	check.size = sizeof(check);
	check.op = test_op_md_check_map;
	check.id = hwpt_id_;
	check.check_map = {iova_, length, reinterpret_cast<uintptr_t>(addr)};
	return ioctl(fd_.get(), test_cmd, &check) ? errno : 0;
}

} // namespace pinmatrix
