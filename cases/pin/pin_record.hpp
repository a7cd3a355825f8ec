// SPDX-License-Identifier: GPL-2.0
#pragma once

// A pin case's record in results.json (matrix/results.hpp, schema
// "pinmatrix/1"; fields: reports/README.md): what the case saw and its
// verdict, to JSON and back (an observation crosses from the case's process
// to the runner's as JSON).

#include <nlohmann/json.hpp>

#include "case_record.hpp"
#include "pin_judge.hpp"

namespace pinmatrix {

nlohmann::json to_json(const page_state &p);
page_state page_state_from_json(const nlohmann::json &j);
nlohmann::json to_json(const observation &o);
observation observation_from_json(const nlohmann::json &j);
case_record record_of(const case_result &r);

} // namespace pinmatrix
