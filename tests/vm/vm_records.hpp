// SPDX-License-Identifier: GPL-2.0
#pragma once

// The guest tests' common steps: one `pinmatrix vm` run into its own
// directory and its results.json, the preconditions of a guest, and a
// case's record by id.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"

namespace pinmatrix::test {

struct guest_run {
	command_result run;
	nlohmann::json doc;	// results.json; null when there is none (the output says why)
};

// `pinmatrix vm ARGS --out DIR`, DIR = PINMATRIX_TEST_OUT/name, emptied first.
inline guest_run run_guest(const std::string &name, const std::string &args)
{
	const std::filesystem::path dir = std::filesystem::path(PINMATRIX_TEST_OUT) / name;
	std::filesystem::remove_all(dir);
	guest_run g{run_pinmatrix("vm " + args + " --out " + dir.string()), {}};
	std::ifstream in(dir / "results.json");
	EXPECT_TRUE(in) << g.run.output;
	if (in)
		g.doc = nlohmann::json::parse(in);
	return g;
}

// In a test body (GTEST_SKIP returns from it): root and QEMU, or a SKIP.
#define PINMATRIX_REQUIRE_GUEST()                                                  \
	do {                                                                       \
		if (geteuid() != 0)                                                \
			GTEST_SKIP() << "needs root";                             \
		if (std::system("command -v qemu-system-x86_64 >/dev/null"))      \
			GTEST_SKIP() << "needs qemu-system-x86_64";               \
	} while (0)

// The record of case `id` in a "cases" array, or in a document's cases.
inline const nlohmann::json &case_by_id(const nlohmann::json &doc_or_cases, const std::string &id)
{
	const nlohmann::json &cases = doc_or_cases.is_object() ? doc_or_cases.at("cases") : doc_or_cases;
	for (const auto &c : cases)
		if (c.at("id") == id)
			return c;
	throw std::runtime_error("no case " + id);
}

} // namespace pinmatrix::test
