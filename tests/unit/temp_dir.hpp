// SPDX-License-Identifier: GPL-2.0
#pragma once

// Files for a test: a fresh directory removed at its end, and whole files
// written and read back.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace pinmatrix::test {

namespace fs = std::filesystem;

// A fresh directory, removed with everything in it at the end of the test.
class temp_dir {
public:
	temp_dir()
	{
		std::string pattern = (fs::temp_directory_path() / "pm-test-XXXXXX").string();
		if (!mkdtemp(pattern.data()))
			throw std::runtime_error("mkdtemp");
		path_ = pattern;
	}
	temp_dir(const temp_dir &) = delete;
	temp_dir &operator=(const temp_dir &) = delete;
	~temp_dir()
	{
		std::error_code ignored;
		fs::remove_all(path_, ignored);
	}
	const fs::path &path() const { return path_; }
	fs::path operator/(const std::string &name) const { return path_ / name; }

private:
	fs::path path_;
};

inline void write_file(const fs::path &path, const std::string &text)
{
	fs::create_directories(path.parent_path());
	std::ofstream(path) << text;
}

inline std::string read_file(const fs::path &path)
{
	std::ifstream in(path);
	return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace pinmatrix::test
