# The layers of src/ (docs/architecture.md): which folders a folder's files may include.
# Run by the build before any vela library compiles (target vela_layers) and by ctest (layers):
#   cmake -DSRC=<repo>/src [-DSTAMP=file] [-DPLANT=lua/x.cpp:vulkan/device.hpp] -P check_layers.cmake
# A wrong-way include fails with "file:line: <folder> may not include <header>". PLANT adds one
# made-up include to the check (ctest's layers.selftest: the check must catch it).
# The libraries in CMakeLists.txt link in the same direction (vela_<folder>).

cmake_minimum_required(VERSION 3.20)

# folder -> the folders its files may include ("root": src/backends.hpp; "vulkan" is also <vulkan/...>).
set(allow_core core)
set(allow_cpu core cpu)
set(allow_vulkan core vulkan)
set(allow_userk core userk vulkan)
set(allow_lua core lua userk)
set(allow_bench core cpu lua bench)
set(allow_dist core lua dist)
set(allow_repl core lua repl bench dist)
set(allow_jupyter core lua repl jupyter)
set(allow_root core cpu lua repl bench dist jupyter userk root)  # main.cpp: everything but Vulkan
set(known core cpu vulkan userk lua bench dist repl jupyter root)
# Stricter per file: the headers of src/userk are what the Lua bindings include: no Vulkan.
set(userk_headers_allow core userk)
# The one composition root, which sees every folder: it wires the devices together.
set(any_file backends.cpp)
# Exceptions, "file:header", each with its reason (none today).
set(exceptions)

if(NOT SRC)
  message(FATAL_ERROR "check_layers.cmake: -DSRC=<repo>/src is required")
endif()
file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*.cpp ${SRC}/*.hpp ${SRC}/*.h ${SRC}/*.inc)

set(includes)  # "file|line|header" per include of every file
foreach(f ${files})
  file(STRINGS ${SRC}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  set(n 0)
  foreach(l ${lines})
    math(EXPR n "${n} + 1")
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]*)[\">].*" "\\1" h "${l}")
    list(APPEND includes "${f}|#${n}|${h}")
  endforeach()
endforeach()
if(PLANT)
  string(REPLACE ":" "|planted|" planted "${PLANT}")
  list(APPEND includes "${planted}")
endif()

set(bad)
foreach(entry ${includes})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 f)
  list(GET parts 1 where)
  list(GET parts 2 h)
  if(f IN_LIST any_file)
    continue()
  endif()
  # The folder of the file (root for src/main.cpp and src/backends.hpp) and of the header.
  if(f MATCHES "^([a-z_]+)/")
    set(from ${CMAKE_MATCH_1})
  else()
    set(from root)
  endif()
  if(h MATCHES "\\.\\./")
    list(APPEND bad "${f} (${where}): \"${h}\": no ../ includes; name the folder")
    continue()
  endif()
  if(h MATCHES "^([a-z_]+)/")
    set(to ${CMAKE_MATCH_1})
  elseif(h STREQUAL "backends.hpp")
    set(to root)
  else()
    continue()  # a system header, or one of the file's own folder
  endif()
  if(NOT to IN_LIST known)
    continue()  # <sys/...>, <shaderc/...>, <xeus/...>: not a folder of src/
  endif()
  set(allowed ${allow_${from}})
  if(from STREQUAL "userk" AND f MATCHES "\\.hpp$")
    set(allowed ${userk_headers_allow})
  endif()
  if("${f}:${h}" IN_LIST exceptions)
    continue()
  endif()
  if(NOT to IN_LIST allowed)
    list(JOIN allowed ", " may)
    list(APPEND bad "src/${f} (its include ${where}): ${from} may not include ${h} (${from} may include: ${may})")
  endif()
endforeach()

if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "vela layers: wrong-way includes (docs/architecture.md, cmake/check_layers.cmake):\n  ${text}")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
list(LENGTH files nfiles)
list(LENGTH includes nincludes)
message(STATUS "vela layers: ${nincludes} includes of ${nfiles} files in src/ go the allowed way")
