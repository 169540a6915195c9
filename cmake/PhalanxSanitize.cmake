# PHALANX_SANITIZE: which sanitizer the whole build (libraries, tests, programs) is compiled with.
#   OFF      none (the default)
#   address  AddressSanitizer + UndefinedBehaviorSanitizer (ON means the same, for older build dirs)
#   thread   ThreadSanitizer. tests/run.sh builds only the threaded tests this way (build-tsan) and
#            runs them with tests/tsan.supp: Debian's gRPC, Protobuf and Abseil are not
#            instrumented, so TSan cannot see their synchronization.
# A sanitizer build links its runtime into everything, so keep one build directory per setting.
set(PHALANX_SANITIZE OFF CACHE STRING "Sanitizer: OFF, address (ASan+UBSan; ON is the same) or thread (TSan)")
set_property(CACHE PHALANX_SANITIZE PROPERTY STRINGS OFF address thread)

string(TOLOWER "${PHALANX_SANITIZE}" _phx_sanitize)
if(_phx_sanitize MATCHES "^(on|yes|true|1)$")
  set(_phx_sanitize address)
elseif(_phx_sanitize MATCHES "^(off|no|false|0|)$")
  set(_phx_sanitize off)
endif()

# PHALANX_SANITIZER: the normalized choice (off, address or thread), for tests that differ.
set(PHALANX_SANITIZER ${_phx_sanitize})

# The ASan/UBSan build compiles at -O1 (what the ASan docs recommend: reports keep their frames;
# about a sixth less compile time than -O2 for these gRPC/Protobuf-heavy files, measured on
# scheduler/service/daemon.cc). It exists to run the tests, not to be deployed; the plain build
# keeps -O2, and its -Werror sees -O2's warnings. The TSan build stays at -O2: tests/tsan.supp's
# entries for gRPC's header-inlined callback code match the frames -O2's inlining leaves (at -O1
# the same accesses surface under std::atomic and std::function frames instead).
if(_phx_sanitize STREQUAL "address" AND CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG")
  set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG")
endif()

if(_phx_sanitize STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 with -fsanitize=address reports false -Wmaybe-uninitialized inside libstdc++'s
    # std::regex compiler (its docs warn sanitizers may cause such false positives); the
    # warning stays an error in the normal build.
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=address,undefined)
elseif(_phx_sanitize STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC warns (-Wtsan) wherever std::atomic_thread_fence is inlined, since TSan does not model
    # fences: Boost.Asio's std_fenced_block around every handler call. Asio's handoffs are
    # ordered by its scheduler's mutex, which TSan does see; Phalanx's own code uses no fences.
    add_compile_options(-Wno-tsan)
  endif()
  add_link_options(-fsanitize=thread)
elseif(NOT _phx_sanitize STREQUAL "off")
  message(FATAL_ERROR "PHALANX_SANITIZE='${PHALANX_SANITIZE}': use OFF, address or thread")
endif()
