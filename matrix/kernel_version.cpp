// SPDX-License-Identifier: GPL-2.0
#include "kernel_version.hpp"

#include <climits>
#include <regex>

#include "text.hpp"

namespace pinmatrix {

std::string kernel_version::text() const
{
	return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<kernel_version> upstream_version(const std::string &release, const std::string &uname_v)
{
	static const std::regex debian(R"(Debian (\d+)\.(\d+)\.(\d+))");
	static const std::regex debian_abi(R"(^\d+\.\d+\.0-\d+-)");
	static const std::regex leading(R"(^(\d+)\.(\d+)(?:\.(\d+))?)");
	std::smatch m;
	auto to_version = [&] {
		return kernel_version{std::stoi(m[1]), std::stoi(m[2]), m[3].matched ? std::stoi(m[3]) : 0};
	};
	if (std::regex_search(uname_v, m, debian))
		return to_version();
	if (std::regex_search(release, debian_abi))
		return std::nullopt;	// an ABI name: its .0 is not the version
	if (std::regex_search(release, m, leading))
		return to_version();
	return std::nullopt;
}

namespace {

// The release after v, as before() counts.
kernel_version following(const kernel_version &v)
{
	if (v.minor == INT_MAX)
		return {v.major + 1, 0, 0};
	if (v.patch == INT_MAX)
		return {v.major, v.minor + 1, 0};
	return {v.major, v.minor, v.patch + 1};
}

} // namespace

std::string range_text(const version_range &r)
{
	const std::string commit = r.commit ? std::string(" (") + r.commit + ")" : "";
	if (r.first == kernel_version{0, 0, 0}) {
		if (r.open)
			return "every kernel";
		const kernel_version next = following(r.last);
		return "before " + (next.patch ? next.text() : std::to_string(next.major) + "." + std::to_string(next.minor));
	}
	if (r.open)
		return r.first.text() + " on" + commit;
	if (r.first.patch == 0 && r.last.patch == INT_MAX && r.first.major == r.last.major &&
	    r.first.minor == r.last.minor)
		return "every " + std::to_string(r.first.major) + "." + std::to_string(r.first.minor) + commit;
	return r.first.text() + "-" + r.last.text() + commit;
}

std::string ranges_text(const std::vector<version_range> &ranges)
{
	if (ranges.empty())
		return "every kernel";
	return join(ranges, ", ", range_text);
}

} // namespace pinmatrix
