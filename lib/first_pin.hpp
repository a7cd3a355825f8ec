// SPDX-License-Identifier: GPL-2.0
#pragma once

// The rungs of the pinning ladder (fig. 3 of the incident write-up), as
// first pins taken and held before the second, long-term pin.

#include <optional>
#include <string_view>
#include <vector>

#include "pin_module.hpp"

namespace pinmatrix {

enum class first_pin { none, mlock, gup_ref, foll_pin, foll_pin_longterm };

struct first_pin_traits {
	first_pin kind;
	const char *name;	// kebab-case, for case names and the CLI
	const char *label;	// for people: the GUP flags
	// Holds a page reference that migration must account for.
	bool holds_reference;
	// Declares FOLL_LONGTERM, so its own pin validates placement first.
	bool declares_longterm;
	const char *rung;
};

const first_pin_traits &traits(first_pin f);
std::string_view name(first_pin f);
std::optional<first_pin> parse_first_pin(std::string_view s);
const std::vector<first_pin_traits> &all_first_pins();

// A first pin held on a range until release() or destruction.
class first_pin_holder {
public:
	first_pin_holder() = default;
	first_pin_holder(first_pin_holder &&o) noexcept;
	first_pin_holder &operator=(first_pin_holder &&o) noexcept;
	first_pin_holder(const first_pin_holder &) = delete;
	first_pin_holder &operator=(const first_pin_holder &) = delete;
	~first_pin_holder();

	// 0 or -errno. For pins by the module, pfns() are the pinned PFNs.
	static int try_take(first_pin kind, const pin_module &module, void *addr,
			    size_t length, first_pin_holder &out);
	int release();
	const std::vector<uint64_t> &pfns() const;

private:
	first_pin kind_ = first_pin::none;
	void *addr_ = nullptr;
	size_t length_ = 0;
	bool locked_ = false;
	held_pin pin_;
};

} // namespace pinmatrix
