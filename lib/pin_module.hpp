// SPDX-License-Identifier: GPL-2.0
#pragma once

// C++ side of /dev/pinmatrix (kmod/pinmatrix). IGT style: try_foo() returns
// 0 or -errno and changes nothing on failure; foo() throws std::system_error.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "page_probe.hpp"
#include "pinmatrix.h"
#include "unique_fd.hpp"

namespace pinmatrix {

inline constexpr const char *default_device_path = "/dev/" PINMATRIX_DEVICE_NAME;

class pin_module;

// A first pin held by the module; released when this goes (or the fd
// closes). It must not outlive the pin_module that took it.
class held_pin {
public:
	held_pin() = default;
	held_pin(held_pin &&o) noexcept;
	held_pin &operator=(held_pin &&o) noexcept;
	held_pin(const held_pin &) = delete;
	held_pin &operator=(const held_pin &) = delete;
	~held_pin();

	uint32_t id() const { return id_; }
	const std::vector<uint64_t> &pfns() const { return pfns_; }
	explicit operator bool() const { return id_ != 0; }
	// Releases now; returns 0 or -errno.
	int release();

private:
	friend class pin_module;
	int module_fd_ = -1;
	uint32_t id_ = 0;
	std::vector<uint64_t> pfns_;
};

class pin_module final : public page_prober {
public:
	// Throws unmet_need when the device is absent (module not loaded) or
	// not ours to open (not root).
	static pin_module open(const std::string &path = default_device_path);

	int try_info(pinmatrix_info &info) const;
	pinmatrix_info info() const;

	// PINMATRIX_IOC_PROBE. Without PINMATRIX_PROBE_FAULT the absent pages
	// come from /proc/self/pagemap, as the module would report them, and
	// only runs of present pages reach the module.
	int try_probe(uintptr_t addr, size_t npages, std::vector<pinmatrix_page> &out,
		      uint32_t flags = 0) const;
	// The same into out[npages], which is left undefined on failure.
	int try_probe_into(uintptr_t addr, size_t npages, pinmatrix_page *out,
			   uint32_t flags = 0) const;
	std::vector<pinmatrix_page> probe(uintptr_t addr, size_t npages,
					  uint32_t flags = 0) const;
	pinmatrix_page probe_one(uintptr_t addr) const { return probe(addr, 1).at(0); }
	std::vector<pinmatrix_page> probe_pages(uintptr_t addr, size_t npages) const override
	{
		return probe(addr, npages);
	}
	const char *probe_name() const override { return "module"; }

	// 0 or -errno; on a GUP error *stopped_at (when given) is the index of
	// the page it could not pin (struct pinmatrix_pin.pinned), else npages.
	int try_pin(pinmatrix_contract contract, uintptr_t addr, size_t npages,
		    uint32_t flags, held_pin &out, size_t *stopped_at = nullptr) const;
	// Throws sys_error naming the contract and, for a GUP error, the page.
	held_pin pin(pinmatrix_contract contract, uintptr_t addr, size_t npages,
		     uint32_t flags = PINMATRIX_PIN_WRITE) const;

	int try_unpin(uint32_t id) const;
	int try_list(std::vector<pinmatrix_pin_info> &out) const;
	std::vector<pinmatrix_pin_info> list() const;

	int fd() const { return fd_.get(); }

private:
	explicit pin_module(unique_fd fd) : fd_(std::move(fd)) {}
	unique_fd fd_;
};

const char *zone_name(uint8_t zone);
const char *migratetype_name(uint8_t mt);
const char *contract_name(uint32_t contract);
const char *mt_method_name(uint32_t method);

// The pages of a case's own memory read through the test module where it
// can be opened, else (--no-module, or no module here) through pagemap.
struct page_probe_in_use {
	std::optional<pin_module> module;
	pagemap_prober pagemap;
	const page_prober &get() const
	{
		return module ? static_cast<const page_prober &>(*module) : pagemap;
	}
};
page_probe_in_use open_page_probe(bool without_module);

} // namespace pinmatrix
