// Files from and for users, opened the one careful way (DESIGN.md, "Untrusted
// input"): what every save and load goes through.
//   Reader  a regular file only (never a device, a pipe, a directory: reading
//           /dev/zero would never end), its size known before anything is
//           read, read in pieces that the caller bounds.
//   Writer  a save: the target's link resolved (a symlink is written
//           through, not replaced), a target that exists must be a regular
//           file; the bytes go to an unnamed temporary file (O_TMPFILE) in
//           the target's directory, with the target's mode, so a save killed
//           half way leaves nothing behind; commit() makes it durable and
//           renames it over the target, so the old file is intact until the
//           new one is whole. Where O_TMPFILE is not supported the temporary
//           has a unique name (pid, counter, random; created O_EXCL), and a
//           later save to the same directory removes those of dead processes.
// Ctrl-C (vela::interrupt_flag) stops a save between pieces, before the
// rename, and the old file stays.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace vela::lua::files {

class Reader {
public:
    // `what` names the file in errors ("load: 'x.npy'").
    Reader(const std::string& path, const std::string& what);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    uint64_t size() const { return size_; }
    uint64_t offset() const { return at_; }
    // Exactly n bytes or an error saying the file is truncated.
    void read(void* dst, size_t n);

private:
    int fd_ = -1;
    uint64_t size_ = 0, at_ = 0;
    std::string what_;
};

class Writer {
public:
    // `what` names the target in errors ("save: 'x.npz'").
    Writer(const std::string& path, const std::string& what);
    ~Writer();  // not committed: the temporary is removed, the target untouched
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    void write(const void* src, size_t n);
    void write_at(uint64_t offset, const void* src, size_t n);  // patch what was written
    uint64_t offset() const { return at_; }
    void commit();
    const std::string& target() const { return target_; }

private:
    void check_interrupt_save();
    int fd_ = -1;
    uint64_t at_ = 0;
    bool committed_ = false;
    std::string what_, target_, dir_, named_tmp_;  // named_tmp_: only without O_TMPFILE
};

// Reads a whole small regular file (at most `limit` bytes, else an error).
std::string read_small(const std::string& path, const std::string& what, uint64_t limit);

// The bytes the host may still allocate (the cpu device's rule: RAM,
// cgroup, RLIMIT_AS), and an error naming `what` when `bytes` exceed it.
void check_host_memory(uint64_t bytes, const std::string& what, const char* for_what);

}  // namespace vela::lua::files
