// SPDX-License-Identifier: GPL-2.0
#pragma once

// The running kernel's own FOLL_* values, to decode the gup_flags of a
// trace: from its BTF where FOLL_* is an enum (every flag, internal ones
// too), else from pinmatrix.ko, which reports those of the headers it was
// built against (struct pinmatrix_info.foll). Never from a version number:
// a kernel that offers neither is not decoded.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pinmatrix {

struct foll_bit {
	uint32_t value;
	std::string name;	// "FOLL_LONGTERM"
};

struct foll_table {
	std::vector<foll_bit> bits;	// empty: unknown
	std::string source;		// "BTF (/sys/kernel/btf/vmlinux)", "pinmatrix.ko ..."

	std::optional<uint32_t> value_of(const std::string &name) const;
	// "FOLL_WRITE|FOLL_LONGTERM|0x80000" (bits it has no name for in hex);
	// nullopt when the table is empty.
	std::optional<std::string> text(uint32_t flags) const;
	// Whether FOLL_LONGTERM is set; nullopt when the table does not know it.
	std::optional<bool> longterm(uint32_t flags) const;
};

// The FOLL_* enumerators of a raw BTF blob (the format of
// /sys/kernel/btf/vmlinux); an empty table when it has none. Throws
// std::runtime_error for a blob that is not BTF or is cut short.
foll_table foll_from_btf(std::span<const std::byte> btf);

// The running kernel's: BTF, else the module, else unknown (empty).
foll_table running_foll_table();

} // namespace pinmatrix
