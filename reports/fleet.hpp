// SPDX-License-Identifier: GPL-2.0
#pragma once

// One report for a fleet (ansible/roles/collect): node x case verdicts with
// each node's evidence, from one directory per node holding what the
// playbook fetched from it:
//   status.json   {"node", "state": "ran" | "cannot_run" | "failed", "reason", ...}
//   facts.json    the preflight facts (kernel, CMA, RDMA, drivers, IOMMU, memlock)
//   results.json  the node's `pinmatrix run` (absent when it could not run)
// The merged results.json (schema pinmatrix/1) names the node in every
// record (`node`, and `kernel.name`, so the HTML grid has a column per
// node); a node that could not run is one SKIP record, "cannot run here:
// <why>", and one that failed is an ERROR record. Then the usual reports
// (results.ktap, junit.xml, report.html, summary.md) and fleet.md.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinmatrix {

// Throws usage_error for a missing node directory or unreadable JSON.
nlohmann::json merge_fleet(const std::vector<std::filesystem::path> &node_dirs);
// Node x case grid, plain text.
std::string format_fleet_grid(const nlohmann::json &fleet);
// fleet.md: the grid, then each node's state and evidence.
std::string format_fleet_markdown(const nlohmann::json &fleet);

// `pinmatrix report --fleet NODE_DIR... --out DIR`: writes DIR/results.json,
// the reports and fleet.md, prints the grid. Exit: 0, 1 (a fail or error),
// 4 (nothing ran anywhere).
int fleet_report_command(const std::vector<std::filesystem::path> &node_dirs,
			 const std::filesystem::path &out);

} // namespace pinmatrix
