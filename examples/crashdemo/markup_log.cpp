#include "markup_log.hpp"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace markup {

void say(int fd, const char* format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof line - 1, format, args);
  va_end(args);
  if (n < 0) return;
  if (n > static_cast<int>(sizeof line) - 2) n = sizeof line - 2;
  line[n++] = '\n';
  for (int done = 0; done < n;) {
    ssize_t w = write(fd, line + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<int>(w);
  }
}

namespace {

struct Walk {
  int fd;
  int next_id;
};

// The GNU build ID of a loaded object, as hex; false when it has none.
bool build_id(const dl_phdr_info* info, char* hex, size_t hex_size) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr)* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof *note;
      const unsigned char* desc =
          reinterpret_cast<const unsigned char*>(name + ((note->n_namesz + 3) & ~3u));
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          2 * note->n_descsz < hex_size) {
        for (unsigned j = 0; j < note->n_descsz; ++j) snprintf(hex + 2 * j, 3, "%02x", desc[j]);
        return true;
      }
      p = reinterpret_cast<const char*>(desc) + ((note->n_descsz + 3) & ~3u);
    }
  }
  return false;
}

const char* display_name(const char* path) {
  if (path == nullptr || *path == '\0') return program_invocation_short_name;
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int one_object(dl_phdr_info* info, size_t, void* data) {
  Walk* walk = static_cast<Walk*>(data);
  char id[2 * 64 + 1];
  if (!build_id(info, id, sizeof id)) return 0;
  const char* name = display_name(info->dlpi_name);
  if (strncmp(name, "linux-vdso", 10) == 0) return 0;  // no file to symbolize from
  int module = walk->next_id++;
  say(walk->fd, "{{{module:%d:%s:elf:%s}}}", module, name, id);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t first = ph.p_vaddr & ~(page - 1);
    uintptr_t last = (ph.p_vaddr + ph.p_memsz + page - 1) & ~(page - 1);
    char mode[4];
    int m = 0;
    if (ph.p_flags & PF_R) mode[m++] = 'r';
    if (ph.p_flags & PF_W) mode[m++] = 'w';
    if (ph.p_flags & PF_X) mode[m++] = 'x';
    mode[m] = '\0';
    say(walk->fd, "{{{mmap:%#lx:%#lx:load:%d:%s:%#lx}}}",
        static_cast<unsigned long>(info->dlpi_addr + first),
        static_cast<unsigned long>(last - first), module, mode, static_cast<unsigned long>(first));
  }
  return 0;
}

}  // namespace

void context(int fd) {
  say(fd, "{{{reset}}}");
  Walk walk{fd, 0};
  dl_iterate_phdr(one_object, &walk);
}

}  // namespace markup
