" Symbolizer markup in logs: {{{tag:field:...}}} elements over plain text.
if exists("b:current_syntax")
  finish
endif

syntax match stackmarkSeparator contained ":"
syntax match stackmarkHex contained "\<0x\x\+\>"
syntax match stackmarkBuildId contained "\%(:\)\@<=\x\{16,}\%(:\|}}}\)\@="
syntax match stackmarkNumber contained "\%(:\)\@<=\d\+\%(:\|}}}\)\@="
syntax match stackmarkKeyword contained "\%(:\)\@<=\%(ra\|pc\)\%(}}}\)\@="
syntax match stackmarkKeyword contained "\%(:\)\@<=\%(elf\|load\)\%(:\)\@="
syntax match stackmarkMode contained "\%(:\)\@<=[rwx]\{1,3}\%(:\)\@="
syntax match stackmarkTag contained "\%({{{\)\@<=\h\w*"
syntax region stackmarkElement matchgroup=stackmarkDelimiter start="{{{" end="}}}"
      \ contains=stackmarkTag,stackmarkSeparator,stackmarkHex,stackmarkBuildId,stackmarkNumber,stackmarkKeyword,stackmarkMode
      \ keepend

highlight default link stackmarkDelimiter Delimiter
highlight default link stackmarkTag Statement
highlight default link stackmarkSeparator Delimiter
highlight default link stackmarkHex Number
highlight default link stackmarkNumber Number
highlight default link stackmarkBuildId Constant
highlight default link stackmarkKeyword Keyword
highlight default link stackmarkMode Type

let b:current_syntax = "stackmark"
