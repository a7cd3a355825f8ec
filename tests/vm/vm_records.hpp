// SPDX-License-Identifier: GPL-2.0
#pragma once

// Reading a results.json in the guest tests: a case's record by id.

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace pinmatrix::test {

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
