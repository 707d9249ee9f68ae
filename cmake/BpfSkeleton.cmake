# qs_bpf_skeleton(<target> NAME <name> SOURCE <file.bpf.c> [HEADERS <shared.h>...]): compiles
# a BPF program (clang -target bpf) and generates its libbpf skeleton (bpftool gen skeleton)
# at build time, into ${CMAKE_CURRENT_BINARY_DIR}/bpf/<name>.skel.h; <target> is a custom
# target to depend on. Sets <name>_BPF_DIR in the caller's scope (the include directory of
# the skeleton). Nothing generated is committed.
find_program(QS_BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(QS_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

function(qs_bpf_skeleton target)
  cmake_parse_arguments(BPF "" "NAME;SOURCE" "HEADERS" ${ARGN})
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
  set(obj ${dir}/${BPF_NAME}.bpf.o)
  set(skel ${dir}/${BPF_NAME}.skel.h)
  get_filename_component(src ${BPF_SOURCE} ABSOLUTE)
  get_filename_component(src_dir ${src} DIRECTORY)
  set(arch_include)
  if(CMAKE_LIBRARY_ARCHITECTURE)
    set(arch_include -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
  endif()
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${QS_BPF_CLANG} -target bpf -O2 -g -Wall -Werror ${arch_include} -I${src_dir}
            -c ${src} -o ${obj}
    DEPENDS ${BPF_SOURCE} ${BPF_HEADERS}
    COMMENT "BPF program ${BPF_NAME}")
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${QS_BPFTOOL} gen skeleton ${obj} name ${BPF_NAME} > ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${BPF_NAME}")
  add_custom_target(${target} DEPENDS ${skel})
  set(${BPF_NAME}_BPF_DIR ${dir} PARENT_SCOPE)
endfunction()
