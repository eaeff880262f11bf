// Reading and writing users' files safely (see file_io.hpp).
#include "lua/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "core/error.hpp"
#include "core/host_memory.hpp"

namespace vela::lua::files {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

const char* kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a pipe";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

std::string dir_of(const std::string& p) {
    size_t s = p.rfind('/');
    if (s == std::string::npos) return ".";
    return s == 0 ? "/" : p.substr(0, s);
}

std::string base_of(const std::string& p) {
    size_t s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

// Follows symlinks from `path` to the file they name (which may not exist
// yet); at most 40 links, as the kernel allows.
std::string resolve_links(std::string path, const std::string& what) {
    for (int hops = 0; hops < 40; ++hops) {
        struct stat st {};
        if (lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
        std::string link(size_t(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
        ssize_t n = readlink(path.c_str(), link.data(), link.size());
        if (n < 0) throw Error(what + ": cannot read the symbolic link: " + errno_text(errno));
        link.resize(size_t(n));
        path = !link.empty() && link[0] == '/' ? link : dir_of(path) + "/" + link;
    }
    throw Error(what + ": too many levels of symbolic links");
}

// Unique among this process's saves, and across processes (pid, random).
std::string unique_suffix() {
    static std::atomic<uint64_t> counter{0};
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[80];
    std::snprintf(buf, sizeof buf, "%ld-%llu-%016llx", long(getpid()), (unsigned long long)counter.fetch_add(1),
                  (unsigned long long)rng());
    return buf;
}

// A named temporary of a process that no longer runs (a save killed where
// O_TMPFILE is not supported): ".<base>.vela-tmp-<pid>-...".
void remove_stale_temps(const std::string& dir, const std::string& base) {
    DIR* d = opendir(dir.c_str());
    if (!d) return;
    std::string prefix = "." + base + ".vela-tmp-";
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
        if (pid > 0 && kill(pid_t(pid), 0) != 0 && errno == ESRCH) unlink((dir + "/" + name).c_str());
    }
    closedir(d);
}

}  // namespace

/* ---------------------------------------------------------------------- */
/* Reader                                                                 */
/* ---------------------------------------------------------------------- */

Reader::Reader(const std::string& path, const std::string& what) : what_(what) {
    // O_NONBLOCK: opening a pipe must not wait for a writer before fstat refuses it.
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw Error(what + ": cannot open: " + errno_text(errno));
    struct stat st {};
    if (fstat(fd_, &st) != 0) {
        int e = errno;
        close(fd_);
        throw Error(what + ": cannot read: " + errno_text(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd_);
        throw Error(what + " is " + kind_of(st.st_mode) + ", not a regular file (vela reads files only)");
    }
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    size_ = uint64_t(st.st_size);
}

Reader::~Reader() {
    if (fd_ >= 0) close(fd_);
}

void Reader::read(void* dst, size_t n) {
    if (n > size_ - at_)
        throw Error(what_ + " is truncated: " + std::to_string(n) + " more bytes expected at byte " +
                    std::to_string(at_) + " of " + std::to_string(size_));
    auto* p = static_cast<char*>(dst);
    size_t done = 0;
    while (done < n) {
        ssize_t got = ::read(fd_, p + done, n - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw Error(what_ + ": read failed: " + errno_text(errno));
        if (got == 0) throw Error(what_ + " is truncated (it shrank while being read)");
        done += size_t(got);
    }
    at_ += n;
}

std::string read_small(const std::string& path, const std::string& what, uint64_t limit) {
    Reader r(path, what);
    if (r.size() > limit)
        throw Error(what + " is " + std::to_string(r.size()) + " bytes, more than the " + std::to_string(limit) +
                    " this reads");
    check_host_memory(r.size(), what, "to read it");
    std::string s(size_t(r.size()), '\0');
    r.read(s.data(), s.size());
    return s;
}

void check_host_memory(uint64_t bytes, const std::string& what, const char* for_what) {
    HostMemory lim = available_host_memory();
    if (bytes > lim.bytes)
        throw Error(what + ": out of host memory: " + std::to_string(bytes) + " bytes needed " + for_what + ", " +
                    std::to_string(lim.bytes) + " available (" + lim.source + ")");
}

/* ---------------------------------------------------------------------- */
/* Writer                                                                 */
/* ---------------------------------------------------------------------- */

Writer::Writer(const std::string& path, const std::string& what) : what_(what) {
    target_ = resolve_links(path, what);
    dir_ = dir_of(target_);
    mode_t mode = 0666;  // less the umask, as open() would make a new file
    struct stat st {};
    bool exists = stat(target_.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        throw Error(what + " is " + kind_of(st.st_mode) + ", not a regular file (vela saves to files only)");
    if (exists) mode = st.st_mode & 07777;
    fd_ = open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd_ < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        remove_stale_temps(dir_, base_of(target_));
        for (int tries = 0; tries < 100 && fd_ < 0; ++tries) {
            named_tmp_ = dir_ + "/." + base_of(target_) + ".vela-tmp-" + unique_suffix();
            fd_ = open(named_tmp_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
            if (fd_ < 0 && errno != EEXIST) break;
        }
    }
    if (fd_ < 0) throw Error(what + ": cannot create: " + errno_text(errno));
    if (!exists) {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    // The target's mode (0600 stays 0600) and, where allowed (root), its owner.
    if (fchmod(fd_, mode) != 0) {
        int e = errno;
        close(fd_);
        fd_ = -1;
        if (!named_tmp_.empty()) unlink(named_tmp_.c_str());
        throw Error(what + ": cannot set the mode: " + errno_text(e));
    }
    if (exists && (st.st_uid != geteuid() || st.st_gid != getegid())) {
        if (fchown(fd_, st.st_uid, st.st_gid) != 0) { /* not allowed: the saver owns the new file */
        }
    }
}

Writer::~Writer() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    if (!committed_ && !named_tmp_.empty()) unlink(named_tmp_.c_str());
    named_tmp_.clear();
}

void Writer::write(const void* src, size_t n) {
    write_at(at_, src, n);
    at_ += n;
}

void Writer::write_at(uint64_t offset, const void* src, size_t n) {
    check_interrupt_save();
    const auto* p = static_cast<const char*>(src);
    size_t done = 0;
    while (done < n) {
        ssize_t put = pwrite(fd_, p + done, n - done, off_t(offset + done));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) throw Error(what_ + ": write failed: " + errno_text(put < 0 ? errno : ENOSPC));
        done += size_t(put);
    }
}

void Writer::check_interrupt_save() {
    if (interrupt_flag().exchange(false))
        throw Interrupted(what_ + ": interrupted; the file was left as it was");
}

void Writer::commit() {
    if (fsync(fd_) != 0) throw Error(what_ + ": write failed: " + errno_text(errno));
    check_interrupt_save();  // the last moment the old file can still be kept
    std::string tmp = named_tmp_;
    if (tmp.empty()) {
        // Give the unnamed file a unique name beside the target, then rename it over the target.
        char proc[64];
        std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd_);
        int rc = -1;
        for (int tries = 0; tries < 100 && rc != 0; ++tries) {
            tmp = dir_ + "/." + base_of(target_) + ".vela-tmp-" + unique_suffix();
            rc = linkat(AT_FDCWD, proc, AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW);
            if (rc != 0 && errno != EEXIST) break;
        }
        if (rc != 0) throw Error(what_ + ": cannot name the finished file: " + errno_text(errno));
        named_tmp_ = tmp;
    }
    if (std::rename(tmp.c_str(), target_.c_str()) != 0)
        throw Error(what_ + ": cannot rename the finished file into place: " + errno_text(errno));
    committed_ = true;
    named_tmp_.clear();
    close(fd_);
    fd_ = -1;
    int d = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
        fsync(d);
        close(d);
    }
}

}  // namespace vela::lua::files
