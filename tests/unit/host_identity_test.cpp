// The host both ends of a connection name (protocol/host_identity.h).
#include <gtest/gtest.h>

#include "host_identity.h"

using fedcl::host_identity_of;

TEST(HostIdentity, DiffersByMachineAndByBootAndHidesBoth) {
  std::string here = host_identity_of("3d1219c7c4c5404aaa1f6d2a48adfda4", "4434ff4a-8a2d-46ac-b971-17628680a351");
  EXPECT_EQ(fedcl::kHostIdentityBytes, here.size());
  EXPECT_EQ(here, host_identity_of("3d1219c7c4c5404aaa1f6d2a48adfda4", "4434ff4a-8a2d-46ac-b971-17628680a351"));
  EXPECT_NE(here, host_identity_of("3d1219c7c4c5404aaa1f6d2a48adfda5", "4434ff4a-8a2d-46ac-b971-17628680a351"));
  EXPECT_NE(here, host_identity_of("3d1219c7c4c5404aaa1f6d2a48adfda4", "4434ff4a-8a2d-46ac-b971-17628680a352"));
  EXPECT_EQ(std::string::npos, here.find("3d1219c7"));
  EXPECT_EQ("", host_identity_of("", ""));
  EXPECT_EQ(fedcl::kHostIdentityBytes, fedcl::host_identity().size());
}
