// SPDX-License-Identifier: GPL-2.0
#pragma once

// What a guest's serial console (OUT/serial.log) says about how its run
// went: the lines that explain a dead guest, the job's exit code as stage2
// printed it, the runner's line about a record it could not write, the
// first kernel bug report.

#include <filesystem>
#include <optional>
#include <string>

namespace pinmatrix {

// The lines of the serial log that explain a dead guest: the alarms (a
// call trace with its frames), else its last 15 lines.
std::string serial_excerpt(const std::filesystem::path &serial);

// The job's exit code as stage2 printed it on the console, if it did.
std::optional<int> console_job_exit(const std::filesystem::path &serial);

// The runner's console line about case ID's record, when it could not be
// written ("pinmatrix: ERROR: case B (2/3): its record: ..."); "" if none.
std::string unwritten_record_line(const std::filesystem::path &serial, const std::string &id);

// The first kernel bug report on the guest's console: what the case that
// was running when a guest died or hung most likely met. Empty if none.
std::string first_console_alarm(const std::filesystem::path &serial);

} // namespace pinmatrix
