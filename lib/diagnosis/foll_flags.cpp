// SPDX-License-Identifier: GPL-2.0
#include "foll_flags.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "pinmatrix.h"
#include "text.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

std::optional<uint32_t> foll_table::value_of(const std::string &name) const
{
	for (const auto &b : bits)
		if (b.name == name)
			return b.value;
	return std::nullopt;
}

std::optional<std::string> foll_table::text(uint32_t flags) const
{
	if (bits.empty())
		return std::nullopt;
	std::vector<std::string> names;
	uint32_t left = flags;
	for (const auto &b : bits)
		if (b.value && (left & b.value) == b.value) {
			names.push_back(b.name);
			left &= ~b.value;
		}
	if (left) {
		char hex[16];
		std::snprintf(hex, sizeof(hex), "0x%x", left);
		names.push_back(hex);
	}
	return names.empty() ? "0" : join(names, "|");
}

std::optional<bool> foll_table::longterm(uint32_t flags) const
{
	const auto v = value_of("FOLL_LONGTERM");
	if (!v || !*v)
		return std::nullopt;
	return (flags & *v) != 0;
}

namespace {

// include/uapi/linux/btf.h
constexpr uint16_t btf_magic = 0xeB9F;
enum btf_kind : uint32_t {
	kind_int = 1, kind_ptr, kind_array, kind_struct, kind_union, kind_enum, kind_fwd, kind_typedef,
	kind_volatile, kind_const, kind_restrict, kind_func, kind_func_proto, kind_var, kind_datasec,
	kind_float, kind_decl_tag, kind_type_tag, kind_enum64,
};

struct reader {
	std::span<const std::byte> in;

	uint32_t u32(size_t at) const
	{
		if (at + 4 > in.size())
			throw std::runtime_error("BTF cut short");
		uint32_t v;
		std::memcpy(&v, in.data() + at, 4);
		return v;
	}
};

// The bytes that follow a type's header, by its kind and vlen.
size_t trailing_bytes(uint32_t kind, uint32_t vlen)
{
	switch (kind) {
	case kind_int: case kind_var: case kind_decl_tag:
		return 4;
	case kind_array:
		return 12;
	case kind_struct: case kind_union: case kind_datasec: case kind_enum64:
		return 12 * size_t(vlen);
	case kind_enum: case kind_func_proto:
		return 8 * size_t(vlen);
	case kind_ptr: case kind_fwd: case kind_typedef: case kind_volatile: case kind_const:
	case kind_restrict: case kind_func: case kind_float: case kind_type_tag:
		return 0;
	}
	throw std::runtime_error("BTF type of unknown kind " + std::to_string(kind));
}

} // namespace

foll_table foll_from_btf(std::span<const std::byte> btf)
{
	const reader r{btf};
	if (btf.size() < 24 || (r.u32(0) & 0xffff) != btf_magic)
		throw std::runtime_error("not BTF (no 0xeB9F magic)");
	const size_t hdr = r.u32(4), type_off = hdr + r.u32(8), type_len = r.u32(12);
	const size_t str_off = hdr + r.u32(16), str_len = r.u32(20);
	if (type_off + type_len > btf.size() || str_off + str_len > btf.size())
		throw std::runtime_error("BTF sections past its end");
	auto name = [&](uint32_t off) {
		if (off >= str_len)
			throw std::runtime_error("BTF name past its string section");
		const char *s = reinterpret_cast<const char *>(btf.data() + str_off + off);
		return std::string(s, strnlen(s, str_len - off));
	};
	foll_table t;
	for (size_t at = type_off; at < type_off + type_len;) {
		const uint32_t info = r.u32(at + 4), kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
		const size_t members = at + 12;
		if (kind == kind_enum || kind == kind_enum64)
			for (uint32_t i = 0; i < vlen; i++) {
				const size_t m = members + i * (kind == kind_enum ? 8 : 12);
				const std::string n = name(r.u32(m));
				if (n.starts_with("FOLL_"))
					t.bits.push_back({r.u32(m + 4), n});
			}
		at = members + trailing_bytes(kind, vlen);
	}
	if (!t.bits.empty())
		t.source = "BTF";
	return t;
}

namespace {

foll_table from_btf_file(const char *path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		return {};
	const std::vector<char> raw((std::istreambuf_iterator<char>(in)), {});
	try {
		foll_table t = foll_from_btf(std::as_bytes(std::span(raw)));
		if (!t.bits.empty())
			t.source = std::string("the kernel's BTF (") + path + ")";
		return t;
	} catch (const std::runtime_error &) {
		return {};
	}
}

foll_table from_module()
{
	unique_fd fd(::open("/dev/" PINMATRIX_DEVICE_NAME, O_RDWR | O_CLOEXEC));
	pinmatrix_info info{};
	info.size = sizeof(info);
	if (!fd || ::ioctl(fd.get(), PINMATRIX_IOC_INFO, &info))
		return {};
	static const char *const names[] = {"FOLL_WRITE", "FOLL_GET", "FOLL_FORCE", "FOLL_LONGTERM", "FOLL_PIN"};
	foll_table t;
	for (size_t i = 0; i < std::size(names); i++)
		if (info.foll[i])
			t.bits.push_back({info.foll[i], names[i]});
	if (!t.bits.empty())
		t.source = "pinmatrix.ko (the headers it was built against)";
	return t;
}

} // namespace

foll_table running_foll_table()
{
	// The BTF once; the module each time (it may be loaded later).
	static const foll_table btf = from_btf_file("/sys/kernel/btf/vmlinux");
	return btf.bits.empty() ? from_module() : btf;
}

} // namespace pinmatrix
