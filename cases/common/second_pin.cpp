// SPDX-License-Identifier: GPL-2.0
#include "second_pin.hpp"

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "byte_pattern.hpp"
#include "io_uring_pin.hpp"
#include "mapping.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"
#include "vfio_type1_pin.hpp"

namespace pinmatrix {

namespace {

class ibv_second_pin final : public second_pinner {
public:
	explicit ibv_second_pin(const std::string &device) : dev_(verbs_device::open(device)) {}
	std::string name() const override { return "ibv_reg_mr"; }
	std::string device() const override { return dev_.name(); }
	const char *readback_method() const override { return "rdma-write"; }

	second_pin_result take(void *addr, size_t length) override
	{
		registration reg = register_memory(dev_, addr, length);
		mr_ = std::move(reg.mr);
		return {reg.err, reg.latency_ns};
	}

	// The device writes through its translation; the CPU reads through its
	// page tables. After a migration both must name the new page.
	void readback(void *addr, size_t length, uint64_t seed, std::optional<bool> &same,
		      std::string &detail) override
	{
		mapping source = mapping::anonymous(length, true);
		fill_pattern(source.data(), length, seed);
		registration src = register_memory(dev_, source.data(), length);
		if (!src.mr) {
			same = false;
			detail = "source registration " + errno_name(src.err);
			return;
		}
		try {
			auto qp = loopback_qp::create(dev_);
			int ret = qp.rdma_write(src.mr.get(), source.data(), length,
						reinterpret_cast<uintptr_t>(addr), mr_->rkey,
						std::chrono::seconds(5));
			if (ret) {
				same = false;
				detail = "RDMA WRITE " + errno_name(-ret);
				if (ret == -EIO)
					detail += std::string(", ") +
						  ibv_wc_status_str(ibv_wc_status(qp.last_wc_status()));
			} else {
				same = !std::memcmp(addr, source.data(), length);
				detail = *same ? std::to_string(length) +
							 " bytes written by the device, read back by the CPU"
					       : "CPU read differs from what the device wrote";
			}
		} catch (const std::exception &e) {
			same = false;
			detail = e.what();
		}
	}

	void release() override { mr_.reset(); }

private:
	verbs_device dev_;
	mr_ptr mr_;
};

class io_uring_second_pin final : public second_pinner {
public:
	io_uring_second_pin()
	{
		if (auto why = io_uring_unavailable())
			throw unmet_need(*why);
	}
	std::string name() const override { return "io_uring"; }
	std::string device() const override { return ""; }
	const char *readback_method() const override { return "io_uring-read-fixed"; }

	second_pin_result take(void *addr, size_t length) override
	{
		buf_.release();
		second_pin_result r;
		r.err = -io_uring_buffer::try_register(addr, length, buf_, &r.latency_ns);
		return r;
	}

	void readback(void *addr, size_t length, uint64_t seed, std::optional<bool> &same,
		      std::string &detail) override
	{
		std::vector<std::byte> data(length);
		fill_pattern(data.data(), length, seed);
		int ret = buf_.read_fixed(data.data(), length, std::chrono::seconds(5));
		if (ret) {
			same = false;
			detail = "READ_FIXED " + errno_name(-ret);
			return;
		}
		same = !std::memcmp(addr, data.data(), length);
		detail = *same ? std::to_string(length) +
					 " bytes written by the kernel through the fixed buffer (READ_FIXED), "
					 "read back by the CPU"
			       : "CPU read differs from what the kernel wrote through the fixed buffer";
	}

	void release() override { buf_.release(); }

private:
	io_uring_buffer buf_;
};

// VFIO type1: the page mapped for the device bound to vfio-pci; the edu
// device's DMA is the readback.
class vfio_second_pin final : public second_pinner {
public:
	vfio_second_pin() : vfio_(vfio_type1_pin::open()) {}
	std::string name() const override { return "vfio-type1"; }
	std::string device() const override { return vfio_.device(); }
	const char *readback_method() const override { return "vfio-edu-dma"; }

	second_pin_result take(void *addr, size_t length) override
	{
		second_pin_result r;
		r.err = vfio_.map(addr, length, iova, &r.latency_ns);
		return r;
	}

	void readback(void *addr, size_t length, uint64_t seed, std::optional<bool> &same,
		      std::string &detail) override
	{
		vfio_.device_write(addr, length, seed, same, detail);
	}

	void release() override { vfio_.unmap(); }

private:
	static constexpr uint64_t iova = 0x200000;	// below edu's 28-bit DMA mask
	vfio_type1_pin vfio_;
};

} // namespace

std::unique_ptr<second_pinner> open_second_pinner(const std::string &name, const std::string &device)
{
	if (name == "ibv_reg_mr")
		return std::make_unique<ibv_second_pin>(device);
	if (name == "io_uring")
		return std::make_unique<io_uring_second_pin>();
	if (name == "vfio-type1")
		return std::make_unique<vfio_second_pin>();
	throw usage_error("--second-pin '" + name + "': expected ibv_reg_mr, io_uring or vfio-type1");
}

} // namespace pinmatrix
