// SPDX-License-Identifier: GPL-2.0
#pragma once

// A matrix file (TOML) lists runs: kernel x boot x cases. Each (kernel,
// boot) pair is one guest boot. See matrix/default.toml.

#include <filesystem>
#include <string>
#include <vector>

namespace pinmatrix {

struct matrix_kernel {
	std::string name;			// the key under [kernels]
	std::string spec;			// "debian[:ABI]", "build:FRAGMENT", "image:DIR", "tree:DIR", "debs:DIR"
	std::vector<std::filesystem::path> patches;
};

struct matrix_group {
	matrix_kernel kernel;
	std::string boot;			// a boot placement (matrix/boot.hpp), as vm --boot
	std::vector<std::string> cases;		// empty: all
	std::string append;			// more kernel command line, as vm --append
	unsigned memory_mib = 0;		// guest RAM, as vm --memory; 0: what the boot needs
};

struct matrix_definition {
	std::filesystem::path file;
	std::vector<matrix_group> groups;
};

// Parses and validates the whole file (kernel names, boots, case names,
// files it refers to) before anything runs; relative paths are relative to
// the file. Throws usage_error "FILE:LINE: what is wrong".
matrix_definition load_matrix(const std::filesystem::path &file);

} // namespace pinmatrix
