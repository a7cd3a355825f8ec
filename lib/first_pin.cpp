// SPDX-License-Identifier: GPL-2.0
#include "first_pin.hpp"

#include "mapping.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

namespace pinmatrix {

namespace {

const std::vector<first_pin_traits> table = {
	{first_pin::none, "none", "none", false, false, "resident: physical backing right now"},
	{first_pin::mlock, "mlock", "mlock()", false, false, "not paged out, may still migrate"},
	{first_pin::gup_ref, "gup-ref", "FOLL_GET (held)", true, false,
	 "GUP reference: page object stays alive"},
	{first_pin::foll_pin, "foll-pin", "FOLL_PIN (held)", true, false,
	 "accounted device-DMA pin: page stays put (R525/R535 NVIDIA host pin)"},
	{first_pin::foll_pin_longterm, "foll-pin-longterm", "FOLL_PIN|LONGTERM", true, true,
	 "DMA pin with placement validated (R555 NVIDIA host pin on x86)"},
};

} // namespace

const std::vector<first_pin_traits> &all_first_pins() { return table; }

const first_pin_traits &traits(first_pin f)
{
	for (const auto &t : table)
		if (t.kind == f)
			return t;
	throw std::logic_error("unknown first pin");
}

std::string_view name(first_pin f) { return traits(f).name; }

std::optional<first_pin> parse_first_pin(std::string_view s)
{
	for (const auto &t : table)
		if (s == t.name)
			return t.kind;
	return std::nullopt;
}

first_pin_holder::first_pin_holder(first_pin_holder &&o) noexcept
	: kind_(o.kind_), addr_(std::exchange(o.addr_, nullptr)),
	  length_(std::exchange(o.length_, 0)), locked_(std::exchange(o.locked_, false)),
	  pin_(std::move(o.pin_))
{
}

first_pin_holder &first_pin_holder::operator=(first_pin_holder &&o) noexcept
{
	if (this != &o) {
		release();
		kind_ = o.kind_;
		addr_ = std::exchange(o.addr_, nullptr);
		length_ = std::exchange(o.length_, 0);
		locked_ = std::exchange(o.locked_, false);
		pin_ = std::move(o.pin_);
	}
	return *this;
}

first_pin_holder::~first_pin_holder() { release(); }

int first_pin_holder::try_take(first_pin kind, const pin_module &module, void *addr,
			       size_t length, first_pin_holder &out)
{
	first_pin_holder h;
	h.kind_ = kind;
	h.addr_ = addr;
	h.length_ = length;
	const auto uaddr = reinterpret_cast<uintptr_t>(addr);
	const size_t npages = length / page_size();
	int ret = 0;
	switch (kind) {
	case first_pin::none:
		break;
	case first_pin::mlock:
		ret = mlock(addr, length) ? -errno : 0;
		h.locked_ = !ret;
		break;
	case first_pin::gup_ref:
		ret = module.try_pin(PINMATRIX_CONTRACT_GUP_REF, uaddr, npages,
				     PINMATRIX_PIN_WRITE, h.pin_);
		break;
	case first_pin::foll_pin:
		ret = module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN, uaddr, npages,
				     PINMATRIX_PIN_WRITE, h.pin_);
		break;
	case first_pin::foll_pin_longterm:
		ret = module.try_pin(PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, uaddr, npages,
				     PINMATRIX_PIN_WRITE, h.pin_);
		break;
	}
	if (!ret)
		out = std::move(h);
	return ret;
}

int first_pin_holder::release()
{
	int ret = 0;
	if (locked_)
		ret = munlock(addr_, length_) ? -errno : 0;
	locked_ = false;
	if (int r = pin_.release())
		ret = r;
	return ret;
}

const std::vector<uint64_t> &first_pin_holder::pfns() const { return pin_.pfns(); }

} // namespace pinmatrix
