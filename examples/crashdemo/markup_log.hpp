// Emitting LLVM symbolizer markup about this process.
//
// A crash handler cannot symbolize (no symbols, no demangler, little stack),
// so it prints raw addresses as markup and lets `stackmark symbolize` turn
// them into functions, files and lines afterwards.
#pragma once

#include <cstdarg>

namespace markup {

// printf to `fd`, with a newline; usable in a signal handler in practice
// (snprintf into a stack buffer, then one write()).
void say(int fd, const char* format, ...) __attribute__((format(printf, 2, 3)));

// {{{reset}}}, then {{{module}}} and one {{{mmap}}} per PT_LOAD segment for
// every loaded ELF object that carries a GNU build ID.
void context(int fd);

}  // namespace markup
