// SPDX-License-Identifier: GPL-2.0
#include "user_input.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <vector>

#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t max_text_file = 4 << 20; // a fragment or a patch larger than this is not one

const char *kind_of(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "an unusual file";
}

[[noreturn]] void refuse(const std::string &what, const fs::path &p, const std::string &why)
{
	throw usage_error(what + " " + p.string() + ": " + why);
}

// The file's lines, once it is known to be a readable regular file of sane size.
std::vector<std::string> text_lines(const fs::path &p, const std::string &what)
{
	require_regular_file(p, what);
	if (fs::file_size(p) > max_text_file)
		refuse(what, p, "larger than " + std::to_string(max_text_file >> 20) + " MiB");
	std::ifstream in(p);
	std::vector<std::string> lines;
	for (std::string l; std::getline(in, l);)
		lines.push_back(l);
	return lines;
}

std::string shortened(const std::string &line)
{
	std::string s;
	for (char c : line.substr(0, 60))
		s += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
	return s + (line.size() > 60 ? "..." : "");
}

} // namespace

std::optional<std::string> not_a_regular_file(const fs::path &p)
{
	if (p.empty())
		return "an empty path";
	struct stat st;
	if (stat(p.c_str(), &st))
		return errno == ENOENT || errno == ENOTDIR ? std::string("not found") : std::string(strerror(errno));
	if (!S_ISREG(st.st_mode))
		return std::string("is ") + kind_of(st.st_mode) + ", not a regular file";
	if (access(p.c_str(), R_OK))
		return "is not readable";
	return std::nullopt;
}

void require_regular_file(const fs::path &p, const std::string &what)
{
	if (p.native().find('\0') != std::string::npos)
		refuse(what, shortened(p.native()), "a NUL in the path");
	if (const auto why = not_a_regular_file(p))
		refuse(what, p, *why);
}

void require_kconfig_fragment(const fs::path &p, const std::string &what)
{
	static const std::regex option("CONFIG_[A-Za-z0-9_]+=.*|# CONFIG_[A-Za-z0-9_]+ is not set");
	const auto lines = text_lines(p, what);
	bool any = false;
	for (size_t i = 0; i < lines.size(); i++) {
		const std::string &l = lines[i];
		if (std::regex_match(l, option))
			any = true;
		else if (!l.empty() && l[0] != '#' && l.find_first_not_of(" \t\r") != std::string::npos)
			refuse(what, p, "line " + std::to_string(i + 1) + " '" + shortened(l) +
						"' is not a Kconfig line (CONFIG_X=y, # CONFIG_X is not set, or a comment)");
	}
	if (!any)
		refuse(what, p, "sets no CONFIG_ option: not a Kconfig fragment");
}

void require_patch(const fs::path &p, const std::string &what)
{
	const auto lines = text_lines(p, what);
	for (size_t i = 0; i + 1 < lines.size(); i++)
		if (lines[i].rfind("--- ", 0) == 0 && lines[i + 1].rfind("+++ ", 0) == 0)
			return;
	refuse(what, p, lines.empty() ? "is empty" : "is not a patch (no '--- ' and '+++ ' lines)");
}

void require_writable_dir(const fs::path &p, const std::string &what)
{
	if (p.empty())
		throw usage_error(what + ": an empty path");
	fs::path at = fs::absolute(p);
	std::error_code ec;
	while (!fs::exists(at, ec) && at.has_relative_path())
		at = at.parent_path();
	struct stat st;
	if (stat(at.c_str(), &st))
		refuse(what, p, std::string(at == fs::absolute(p) ? "" : at.string() + ": ") + strerror(errno));
	const std::string where = at == fs::absolute(p) ? "" : "cannot be created: " + at.string() + " ";
	if (!S_ISDIR(st.st_mode))
		refuse(what, p, where + "is " + (S_ISREG(st.st_mode) ? "a file" : kind_of(st.st_mode)) +
					", not a directory");
	if (access(at.c_str(), W_OK | X_OK))
		refuse(what, p, where + "is not writable (" + strerror(errno) + ")");
	// Root passes access() almost everywhere: only making an entry tells
	// (procfs, sysfs, a full disk). The probe is removed at once.
	std::string probe = (at / ".pinmatrix-probe-XXXXXX").string();
	if (!mkdtemp(probe.data()))
		refuse(what, p, where + "takes no new directory (" + strerror(errno) + ")");
	rmdir(probe.c_str());
}

std::string format_refusal(std::string_view format, const std::vector<std::string> &forms)
{
	for (const auto &f : forms)
		if (f == format)
			return "";
	std::string expected;
	for (size_t i = 0; i < forms.size(); i++)
		expected += (i == 0 ? "" : i + 1 == forms.size() ? " or " : ", ") + forms[i];
	return "'" + shortened(std::string(format)) + "': expected " + expected;
}

void require_format(std::string_view format, const std::vector<std::string> &forms)
{
	if (auto why = format_refusal(format, forms); !why.empty())
		throw usage_error("--format: " + why);
}

void require_path_name(const std::string &name, const std::string &what)
{
	static const std::regex safe("[A-Za-z0-9][A-Za-z0-9._+-]{0,63}");
	if (!std::regex_match(name, safe))
		throw usage_error(what + " '" + shortened(name) +
				  "' is not a name (letters, digits, '.', '_', '+', '-', at most 64, "
				  "starting with a letter or digit)");
}

bool is_within(const fs::path &inner, const fs::path &outer)
{
	std::error_code ec_inner, ec_outer;
	const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec_inner);
	fs::path b = fs::weakly_canonical(fs::absolute(outer), ec_outer);
	if (ec_inner || ec_outer)
		return false;
	if (b.filename().empty())
		b = b.parent_path();	// "DIR/"
	const auto [end, _] = std::mismatch(b.begin(), b.end(), a.begin(), a.end());
	return end == b.end();
}

void require_not_input(const fs::path &out, const fs::path &input, const std::string &what)
{
	struct stat o, i;
	const bool same_inode = !stat(out.c_str(), &o) && !stat(input.c_str(), &i) && o.st_dev == i.st_dev &&
				o.st_ino == i.st_ino;
	if (same_inode || (is_within(out, input) && is_within(input, out)))
		throw usage_error(what + " " + out.string() + " is " + input.string() +
				  ", an input: it would be written over");
}

} // namespace pinmatrix
