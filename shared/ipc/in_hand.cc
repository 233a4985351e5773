#include "shared/ipc/in_hand.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace corral::ipc {

InHand* map_in_hand(int fd) {
  void* p = mmap(nullptr, sizeof(InHand), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  return static_cast<InHand*>(p);  // a zeroed page is a valid, idle InHand
}

void unmap_in_hand(InHand* page) {
  if (page) munmap(page, sizeof(InHand));
}

int create_in_hand() {
  int fd = memfd_create("corral-in-hand", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, sizeof(InHand)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace corral::ipc
