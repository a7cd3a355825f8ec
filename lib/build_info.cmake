# SPDX-License-Identifier: GPL-2.0
# Writes OUTPUT (lib/build_info.cpp.in filled in) with the suite's version
# and commit, replacing it only when they changed: run at configure time
# and at every build (the target pinmatrix_build_info_source), a new
# commit rebuilds one file, the same commit nothing.
#   cmake -DSOURCE_DIR=... -DTEMPLATE=... -DOUTPUT=... -DPM_VERSION=...
#         -DPM_FALLBACK_COMMIT=... -P build_info.cmake
# The commit: `git rev-parse --short=12 HEAD` when SOURCE_DIR is the top of
# a git checkout (not a tarball unpacked inside another repository), else
# PM_FALLBACK_COMMIT (the cache variable PINMATRIX_COMMIT), else empty:
# unknown. Only the commit and the version go into the file, never a path.
foreach(_var SOURCE_DIR TEMPLATE OUTPUT PM_VERSION)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "build_info.cmake: ${_var} is not set")
  endif()
endforeach()

set(PM_COMMIT "")
find_program(_pm_git git)
if(_pm_git)
  execute_process(COMMAND "${_pm_git}" -C "${SOURCE_DIR}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE _pm_top RESULT_VARIABLE _pm_rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_pm_rc EQUAL 0)
    file(REAL_PATH "${_pm_top}" _pm_top)
    file(REAL_PATH "${SOURCE_DIR}" _pm_src)
    if(_pm_top STREQUAL _pm_src)
      execute_process(COMMAND "${_pm_git}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                      OUTPUT_VARIABLE _pm_head RESULT_VARIABLE _pm_rc
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_pm_rc EQUAL 0 AND _pm_head MATCHES "^[0-9a-f]+$")
        set(PM_COMMIT "${_pm_head}")
      endif()
    endif()
  endif()
endif()
if(PM_COMMIT STREQUAL "" AND DEFINED PM_FALLBACK_COMMIT)
  string(TOLOWER "${PM_FALLBACK_COMMIT}" PM_COMMIT)
endif()
if(NOT PM_COMMIT STREQUAL "" AND NOT PM_COMMIT MATCHES "^[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]+$")
  message(FATAL_ERROR "PINMATRIX_COMMIT '${PM_COMMIT}': expected a commit's hex digits (7 to 40), or empty for unknown")
endif()
string(LENGTH "${PM_COMMIT}" _pm_len)
if(_pm_len GREATER 40)
  message(FATAL_ERROR "PINMATRIX_COMMIT '${PM_COMMIT}': a commit has at most 40 hex digits")
endif()

configure_file("${TEMPLATE}" "${OUTPUT}.tmp" @ONLY)
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
