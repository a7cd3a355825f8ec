// SPDX-License-Identifier: GPL-2.0
#include "matrix_file.hpp"

#include <climits>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include <toml++/toml.h>

#include "boot.hpp"
#include "sys_error.hpp"
#include "user_input.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

class matrix_parser {
public:
	explicit matrix_parser(const fs::path &file) : file_(file), dir_(fs::absolute(file).parent_path()) {}

	matrix_definition parse()
	{
		toml::table root;
		try {
			root = toml::parse_file(file_.string());
		} catch (const toml::parse_error &e) {
			throw usage_error(file_.string() + ":" + std::to_string(e.source().begin.line) + ": " +
					  std::string(e.description()));
		}
		only_keys(root, {"kernels", "run"}, "the top level");
		const auto *kernels = root["kernels"].as_table();
		if (!kernels || kernels->empty())
			fail(root, "no [kernels.<name>] table");
		for (const auto &[name, node] : *kernels)
			kernels_[std::string(name.str())] = kernel(std::string(name.str()), node);

		const auto *runs = root["run"].as_array();
		if (!runs || runs->empty())
			fail(root, "no [[run]] entry");
		matrix_definition def;
		def.file = file_;
		std::set<std::tuple<std::string, std::string, std::string>> seen;
		for (const auto &node : *runs) {
			const auto *run = node.as_table();
			if (!run)
				fail(node, "[[run]] must be a table");
			if (run->contains("placements"))
				fail(*run, "[[run]]: 'placements' is now 'boots' (as pinmatrix vm --boot)");
			only_keys(*run, {"kernel", "boots", "cases", "append", "memory"}, "[[run]]");
			const std::string kname = string_at(*run, "kernel");
			if (!kernels_.count(kname))
				fail(*run, "kernel '" + kname + "' is not defined under [kernels]");
			const std::string append = run->contains("append") ? append_at(*run) : "";
			const unsigned memory = run->contains("memory") ? memory_at(*run) : 0;
			for (const auto &boot : strings_at(*run, "boots", true)) {
				checked(*run, [&] { find_boot_placement(boot); });
				if (!seen.insert({kname, boot, append}).second)
					fail(*run, "kernel '" + kname + "' with boot '" + boot + "'" +
							   (append.empty() ? "" : " and append '" + append + "'") +
							   " is listed twice");
				def.groups.push_back({kernels_[kname], boot, strings_at(*run, "cases", false), append, memory});
			}
		}
		return def;
	}

private:
	[[noreturn]] void fail(const toml::node &where, const std::string &what) const
	{
		throw usage_error(file_.string() + ":" + std::to_string(where.source().begin.line) + ": " +
				  what);
	}

	// A check's usage_error, with the file and line of WHERE.
	template <class Check>
	void checked(const toml::node &where, Check &&check) const
	{
		try {
			check();
		} catch (const usage_error &e) {
			fail(where, e.what());
		}
	}

	// A NUL would cut the path or argument the string becomes.
	std::string no_nul(const toml::node &where, const std::string &key, std::string s) const
	{
		if (s.find('\0') != std::string::npos)
			fail(where, "'" + key + "' holds a NUL");
		return s;
	}

	void only_keys(const toml::table &t, std::set<std::string> allowed, const std::string &in) const
	{
		for (const auto &[key, node] : t)
			if (!allowed.count(std::string(key.str())))
				fail(node, "unknown key '" + std::string(key.str()) + "' in " + in);
	}

	std::string string_at(const toml::table &t, const char *key) const
	{
		const auto *v = t[key].as_string();
		if (!v)
			fail(t, std::string("'") + key + "' must be a string");
		return no_nul(*v, key, v->get());
	}

	// More kernel command line: words of letters, digits and ._,=:- only
	// (it becomes part of a group's directory name, and of QEMU's -append).
	std::string append_at(const toml::table &t) const
	{
		const std::string a = string_at(t, "append");
		if (a.empty() || a.size() > 200 ||
		    a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._,=:- ") !=
			    std::string::npos)
			fail(*t.get("append"), "'append' must be 1 to 200 characters of letters, digits, spaces and ._,=:-");
		return a;
	}

	// Guest RAM in MiB, as vm --memory (256 to 16384); the boot's own need
	// is checked with the group.
	unsigned memory_at(const toml::table &t) const
	{
		const auto *v = t["memory"].as_integer();
		if (!v || v->get() < 256 || v->get() > 16384)
			fail(*t.get("memory"), "'memory' must be a whole number of MiB, 256 to 16384");
		return unsigned(v->get());
	}

	std::vector<std::string> strings_at(const toml::table &t, const char *key, bool required) const
	{
		std::vector<std::string> out;
		const auto *node = t.get(key);
		if (!node) {
			if (required)
				fail(t, std::string("'") + key + "' is missing");
			return out;
		}
		// Given, a list is never empty: `cases = []` ran every case before.
		const auto *arr = node->as_array();
		if (!arr || arr->empty())
			fail(*node, std::string("'") + key + "' must be a non-empty list of strings" +
					    (required ? "" : " (leave it out for every one)"));
		for (const auto &e : *arr) {
			if (!e.is_string())
				fail(e, std::string("'") + key + "' must list strings");
			out.push_back(no_nul(e, key, e.as_string()->get()));
		}
		return out;
	}

	// A path, relative to the matrix file's directory: never "" (that would
	// silently mean the file's own directory), never longer than a path can
	// be (the message would carry it whole).
	fs::path relative_file(const toml::table &t, const char *key) const
	{
		const std::string p = string_at(t, key);
		if (p.empty())
			fail(t, std::string("'") + key + "' is empty: name a file or directory");
		if (p.size() >= PATH_MAX)
			fail(t, std::string("'") + key + "' is " + std::to_string(p.size()) +
					" bytes long: longer than a path can be (" + std::to_string(PATH_MAX) + ")");
		return relative_to_file(p);
	}

	fs::path relative_to_file(const fs::path &p) const
	{
		return (p.is_relative() ? dir_ / p : p).lexically_normal();
	}

	matrix_kernel kernel(const std::string &name, const toml::node &node)
	{
		const auto *t = node.as_table();
		if (!t)
			fail(node, "[kernels." + name + "] must be a table");
		checked(node, [&] { require_path_name(name, "kernel name"); });
		matrix_kernel k;
		k.name = name;
		const std::string source = string_at(*t, "source");
		if (source == "debian") {
			only_keys(*t, {"source", "abi"}, "[kernels." + name + "]");
			k.spec = t->contains("abi") ? "debian:" + string_at(*t, "abi") : "debian";
		} else if (source == "build") {
			only_keys(*t, {"source", "series", "fragment", "patches"}, "[kernels." + name + "]");
			const fs::path fragment = relative_file(*t, "fragment");
			checked(*t->get("fragment"), [&] { require_kconfig_fragment(fragment, "fragment"); });
			const std::string series = t->contains("series") ? string_at(*t, "series") : "";
			if (!series.empty() && !std::regex_match(series, std::regex("[0-9]+\\.[0-9]+")))
				fail(*t, "series '" + series + "' is not a kernel series such as 6.12");
			k.spec = (series.empty() ? "build" : "build@" + series) + ":" + fragment.string();
			for (const auto &p : strings_at(*t, "patches", false)) {
				k.patches.push_back(relative_to_file(p));
				checked(*t->get("patches"), [&] { require_patch(k.patches.back(), "patch"); });
			}
		} else if (source == "image" || source == "tree" || source == "debs") {
			only_keys(*t, {"source", "dir"}, "[kernels." + name + "]");
			k.spec = source + ":" + relative_file(*t, "dir").string();
		} else {
			fail(*t, "source '" + source + "' of kernel '" + name +
					 "': expected debian, build, image, tree or debs");
		}
		return k;
	}

	fs::path file_;
	fs::path dir_;
	std::map<std::string, matrix_kernel> kernels_;
};

} // namespace

matrix_definition load_matrix(const fs::path &file)
{
	require_regular_file(file, "matrix file");
	return matrix_parser(file).parse();
}

} // namespace pinmatrix
