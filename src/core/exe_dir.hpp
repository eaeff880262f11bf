// The directory of the running binary (/proc/self/exe), "." when unknown: where the shell
// finds its Lua modules in a build tree and vela.dist finds libvela_mpi.so.
#pragma once
#include <string>

namespace vela {
std::string exe_dir();
}
