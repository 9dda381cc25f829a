@0xf30a82527bc22efd;
# The fedcl wire: every message exchanged by the client runtime (libfedcl.so) and a bridge daemon
# (fedcld). Both ends are compiled from this file.
#
# Framing (protocol/frame.h): every frame is a 16-byte little-endian header
#   u32 messageWords   length of the Cap'n Proto message that follows (segment table included), in words
#   u16 kind           FrameKind below
#   u16 flags          reserved, zero
#   u64 payloadBytes   raw bytes that follow the message (buffer contents, kernel printf output),
#                      padded to 8 bytes on the wire
# Bulk data never enters a Cap'n Proto segment: it travels as the frame's payload.
#
# Sessions: the client opens one connection per daemon and sends Hello first. Requests are executed in
# the order they arrive. Object ids are chosen by the client (64-bit, per session); ids below
# firstClientId are the daemon's devices, numbered in the order HelloReply lists them. Creating an
# object therefore needs no reply. A request with seq != 0 is answered by a Reply with that seq; a
# request with seq == 0 is answered only if it fails, by an AsyncError inside a Notice.
#
# Peer links: daemons of one program also talk to each other, one connection per pair of sessions
# of the same client (each session runs in a process of its own), carrying bulk data and event
# signals only (PeerMessage, frame kind peer). The client alone decides what moves where: it asks one
# daemon to send (SendToPeer), the other to receive (ReceiveFromPeer), or one to signal an event to
# the other (SignalPeer). A peer addresses a session of the other daemon by the session's token,
# which HelloReply gave the client.
#
# Inside a daemon, its main process and its session workers talk in WorkerMessages (frame kind
# worker), at the end of this file.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("fedcl::wire");

const protocolVersion :UInt32 = 8;     # 2: peer links per pair of sessions (PeerHello.session)
                                       # 3: proofs bound to the channel and the daemon dialled
                                       # 4: combining receives (ReceiveFromPeer.combine), transfers
                                       #    within one session
                                       # 5: flow control on peer transfers (PeerData.from, PeerCredit)
                                       # 6: events reported when asked (Command.unwatched, watchEvent,
                                       #    Reply.finished)
                                       # 7: small data travels with its event's signal
                                       #    (SignalPeer.data, CreateUserEvent.data, PeerSignal's payload);
                                       #    peer addresses carry their daemon's tag (PeerRef.addressTag);
                                       #    a peer's hello learns nothing before its proof holds
                                       # 8: the same node (Hello.host, Reply.local, shared memory:
                                       #    Request.sharedMemory, sharedPayload, sharedReply; peer links
                                       #    of one host: PeerRef.host, localSocket and its tag,
                                       #    PeerData.shared)
const peerInitialAllowance :UInt64 = 16777216;
                                       # bytes of a transfer a sending daemon puts on a peer link before
                                       # the receiving session's first PeerCredit
const firstClientId :UInt64 = 0x100000000;
const signalDataMaxBytes :UInt64 = 1048576;
                                       # the most bytes a PeerSignal carries (SignalData.size)

enum FrameKind {
  request @0;
  reply @1;
  notice @2;
  peer @3;                # daemon to daemon: a PeerMessage
  worker @4;              # inside one daemon, between its main process and a session worker
}

# ---------------------------------------------------------------------------------------------------
# Handshake

struct Hello {
  protocolVersion @0 :UInt32;
  key @1 :Text;           # obsolete, never set: the key itself no longer travels (see AuthChallenge);
                          # a daemon with a key refuses a Hello that carries one
  client @2 :Text;        # "host:pid program", for the daemon's log
  platform @3 :UInt32;    # which of the daemon's backend platforms this session serves: a context
                          # never mixes backend platforms, so a client opens one session per platform
  user @4 :Text;          # whose key the client proves it holds (the daemon's --key-list); may be empty
  nonce @5 :Data;         # the client's fresh random nonce for the challenge-response
  daemon @6 :Text;        # the daemon's host as the client dialled it (a name or an address): the
                          # proof covers it, and the daemon answers only to its own names
  host @7 :Data;          # the client's host (protocol/host_identity.h), on a TCP connection: a
                          # daemon on the same host that listens on a local socket answers with
                          # Reply.local instead; empty: the client keeps to TCP (FEDCL_LOCAL=off)
}

# Authentication (challenge-response on a pre-shared key; protocol/auth.h). A daemon that has a key
# answers Hello (and a StatusRequest, and a peer's PeerHello) with a challenge holding its own fresh
# nonce. The client answers with an AuthProof: HMAC-SHA256 under the key of a label, both nonces,
# who it claims to be, and what binds the proof to this connection (protocol/auth.h, AuthBinding:
# the TLS session's exporter value, the daemon as dialled, a Resume's token). Only then does the
# daemon execute anything or allocate session state; it proves in turn that it holds the key
# (HelloReply.proof, DaemonStatus.proof, PeerWelcome.proof), with another label, over the same
# fields. The key never crosses the wire, a recorded handshake does not answer a fresh nonce, and a
# proof relayed from another connection does not match this one's binding.
struct AuthChallenge {
  nonce @0 :Data;
}

struct AuthProof {
  proof @0 :Data;         # empty: the client has no key
}

struct InfoEntry {
  param @0 :UInt32;       # a CL_*_INFO constant
  value @1 :Data;         # the bytes clGet*Info returned
}

struct DeviceDesc {
  id @0 :UInt64;                  # object id of the device in this session
  info @1 :List(InfoEntry);       # every clGetDeviceInfo parameter the device answered
}

struct PlatformDesc {
  info @0 :List(InfoEntry);       # clGetPlatformInfo of the backend platform
  devices @1 :List(DeviceDesc);
}

struct HelloReply {
  protocolVersion @0 :UInt32;
  node @1 :Text;                  # the daemon's node name, shown in device names
  platforms @2 :List(PlatformDesc);  # the session's platform alone
  platformCount @3 :UInt32;       # how many backend platforms the daemon exports
  instance @4 :UInt64;            # names this run of the daemon to its peers (random, never 0)
  peerAddress @5 :Text;           # host:port where peers reach it: fedcld --peer-address, else the host
                                  # the client dialled (Hello.daemon) and the port it reached
  sessionToken @6 :UInt64;        # random: how a peer daemon addresses this session (PeerRef)
  proof @7 :Data;                 # the daemon's proof that it holds the key; empty without a key
  resumeToken @8 :Data;           # 16 random bytes naming this session for Request.resume; empty:
                                  # the daemon does not resume dropped connections
  resumeWindowMs @9 :UInt32;      # how long the daemon keeps the session of a dropped connection
  peerAddressTag @10 :Data;       # the daemon's tag of peerAddress under the daemons' key: another
                                  # daemon dials an address only with the tag of a daemon that holds
                                  # its key (PeerRef.addressTag); empty on a daemon without one
  host @11 :Data;                 # the daemon's host (protocol/host_identity.h)
  localSocket @12 :Text;          # the path of its local socket (fedcld --local-socket); empty: none
  localSocketTag @13 :Data;       # as peerAddressTag, of localSocket (protocol/auth.h local_socket_tag):
                                  # another daemon of this host dials the socket only with it
}

# The same node (docs/design-decisions.md, "Same node"). A program and a daemon of one host talk over
# the daemon's local (Unix domain) socket instead of TCP: the client names its host in Hello, and the
# main process of a daemon on that host answers with LocalRedirect and closes the connection; the
# client dials the socket, checks that the process listening there is the one named, and starts its
# handshake again there. On a local connection the proofs are bound to the two processes
# (AuthBinding.channel: "unix DIALLING-PID ANSWERING-PID", each side's view through SO_PEERCRED).
struct LocalRedirect {
  socket @0 :Text;                # the daemon's local socket
  pid @1 :UInt32;                 # its main process, which listens there
}

# Bulk bytes of a local session go through memory the session owns: a memfd the client makes, sealed
# against shrinking and growing, passed once with Request.sharedMemory (SCM_RIGHTS beside that
# request's frame). It is a header page (protocol/shared_region.h: the slots' states) and `slots`
# slots of `slotBytes`. The client takes a free slot, puts a request's payload there (sharedPayload)
# or asks for a reply's payload there (sharedReply); whoever is done with a slot marks it free.
struct SharedMemory {
  bytes @0 :UInt64;               # the memfd's size
  slotBytes @1 :UInt64;           # a multiple of 4096
  slots @2 :UInt32;
}

struct SharedSpan {
  slot @0 :UInt32;                # which slot; the bytes start at its beginning
  bytes @1 :UInt64;               # at most slotBytes
}

# Resuming a session whose connection dropped (docs/design-decisions.md, "Lost daemons"). Both sides
# count the bytes of the session's stream (plaintext, from the first byte of Hello) they sent and
# received, and keep what they sent until the other side acknowledged it (Notice.received,
# Request.ack). A new connection's first request may be resume instead of hello; on a daemon with a
# key it is challenged and answered with authenticate like Hello. The Resume exchange itself is not
# part of the session's stream. Reply.resumed then says how far the daemon read; each side resends
# from the other's count, and the session goes on as if the connection had never dropped.
struct Resume {
  protocolVersion @0 :UInt32;
  token @1 :Data;                 # HelloReply.resumeToken
  received @2 :UInt64;            # bytes of the session's stream the client has received
  user @3 :Text;                  # as Hello.user
  nonce @4 :Data;                 # as Hello.nonce: fresh for this connection
  daemon @5 :Text;                # as Hello.daemon
}

struct Resumed {
  received @0 :UInt64;            # bytes of the session's stream the daemon has received
  proof @1 :Data;                 # as HelloReply.proof
}

struct PeerRef {
  # Another daemon, and the session there that belongs to the same client.
  instance @0 :UInt64;            # its HelloReply.instance: a link that answers otherwise is refused
  address @1 :Text;               # host:port of its peer listener (HelloReply.peerAddress)
  session @2 :UInt64;             # the session's token there
  addressTag @3 :Data;            # its HelloReply.peerAddressTag, passed on as it came
  host @4 :Data;                  # its HelloReply.host and localSocket: a daemon on the same host
  localSocket @5 :Text;           # dials that socket instead of address
  localSocketTag @6 :Data;        # its HelloReply.localSocketTag, passed on as it came
}

# ---------------------------------------------------------------------------------------------------
# Requests

struct Command {
  # What every enqueued command carries.
  queue @0 :UInt64;
  event @1 :UInt64;               # id for the command's event; 0 when the application asked for none
  waitFor @2 :List(UInt64);       # event ids (events of other daemons arrive as user-event proxies)
  unwatched @3 :Bool;             # fedcld keeps the event under its id for later wait lists but reports
                                  # its completion only when asked (watchEvent), and a failure at the
                                  # queue's next finish (Reply.finished): the client's own bookkeeping
                                  # (the buffers a kernel of a multi-daemon context wrote), or an
                                  # application's event that nothing has waited for or asked about yet
}

struct KernelArg {
  index @0 :UInt32;
  union {
    value @1 :Data;               # by-value argument bytes
    memObject @2 :UInt64;         # buffer or image id; 0 for a NULL cl_mem
    localSize @3 :UInt64;         # __local argument of this many bytes
    sampler @4 :UInt64;
  }
}

struct Request {
  seq @0 :UInt64;
  union {
    hello @1 :Hello;

    # Objects. Every create carries the id the client chose for the new object.
    createContext @2 :CreateContext;
    createQueue @3 :CreateQueue;
    createBuffer @4 :CreateBuffer;
    createSubBuffer @5 :CreateSubBuffer;
    createProgramWithSource @6 :CreateProgramWithSource;
    buildProgram @7 :BuildProgram;
    createKernel @8 :CreateKernel;
    createUserEvent @9 :CreateUserEvent;
    setUserEventStatus @10 :SetUserEventStatus;
    release @11 :UInt64;          # drop the session's reference to an object

    # Commands.
    writeBuffer @12 :WriteBuffer;  # payload: the bytes
    readBuffer @13 :ReadBuffer;    # reply payload: the bytes (a Reply is sent even when seq == 0)
    copyBuffer @14 :CopyBuffer;
    fillBuffer @15 :FillBuffer;
    ndRange @16 :NDRange;
    marker @17 :Command;
    barrier @18 :Command;
    flush @19 :UInt64;            # queue id
    finish @20 :UInt64;           # queue id; the reply comes when every command before it completed

    # Queries the client cannot answer from what it mirrors.
    getInfo @21 :GetInfo;

    # Images and samplers; rectangular buffer transfers (host-side pitches are applied by the client,
    # so payloads are always tightly packed).
    createImage @22 :CreateImage;             # payload: initial contents, tightly packed, if any
    createSampler @23 :CreateSampler;
    getSupportedImageFormats @24 :GetSupportedImageFormats;  # reply: info = cl_image_format array
    readImage @25 :ReadImage;                 # reply payload: the region, tightly packed
    writeImage @26 :WriteImage;               # payload: the region, tightly packed
    copyImage @27 :CopyImage;
    fillImage @28 :FillImage;
    copyImageToBuffer @29 :CopyImageToBuffer;
    copyBufferToImage @30 :CopyBufferToImage;
    readBufferRect @31 :ReadBufferRect;       # reply payload: the region, tightly packed
    writeBufferRect @32 :WriteBufferRect;     # payload: the region, tightly packed
    copyBufferRect @33 :CopyBufferRect;

    # Programs from binaries and IL, separate compilation and linking; sub-devices.
    createProgramWithBinary @34 :CreateProgramWithBinary;  # reply: build (each device's binary type);
                                              # on failure info = cl_int binary status per device
    createProgramWithIL @35 :CreateProgramWithIL;
    createProgramWithBuiltInKernels @36 :CreateProgramWithBuiltInKernels;
    compileProgram @37 :CompileProgram;       # reply: build
    linkProgram @38 :LinkProgram;             # reply: build
    setSpecializationConstant @39 :SetSpecializationConstant;
    createSubDevices @40 :CreateSubDevices;   # reply: subDevices; info = cl_uint count if maxDevices is 0

    # Daemon to daemon (see PeerMessage).
    peerConnect @41 :PeerRef;                 # reply: whether a peer link to it can be had, now
    sendToPeer @42 :SendToPeer;
    receiveFromPeer @43 :ReceiveFromPeer;
    signalPeer @44 :SignalPeer;

    # The transfer engine: bytes the client itself streams into a ReceiveFromPeer whose sender is 0
    # (a file the client reads, clEnqueueWriteBufferFromStdioFile).
    transferData @45 :TransferData;           # payload: the chunk's bytes
    transferAbort @46 :TransferAbort;         # no more bytes will come: the receive fails (or a
                                              # send waiting for TransferTo: it fails)
    # Files of the daemon's node (under its --file-root): the bytes never cross to the client.
    nodeFile @47 :NodeFile;
    # A transfer whose other end is found after its command was sent (an MPI message: the two
    # processes agree on the path only once both have asked).
    transferTo @48 :TransferTo;               # names a SendToPeer's destination
    transferFrom @49 :TransferFrom;           # names a ReceiveFromPeer's sender

    # Operations: what the daemon serves and who uses it (`fedcl status`). Taken instead of Hello as a
    # connection's first request; it opens no session on the devices, and the daemon closes the
    # connection after its reply (daemonStatus).
    daemonStatus @50 :StatusRequest;

    # The answer to Reply.challenge; reply: what the first request asked for (hello, daemonStatus).
    authenticate @51 :AuthProof;

    # Resumption (struct Resume): a new connection's first request, instead of hello.
    resume @52 :Resume;
    # The client has received this many bytes of the session's stream; no reply (seq 0).
    ack @53 :UInt64;
    # The client is done (its process exits): the session closes now instead of waiting to be
    # resumed when the connection closes. No reply (seq 0).
    goodbye @54 :Void;

    # Command buffers (cl_khr_command_buffer): recorded once, replayed by the daemon with one
    # request per clEnqueueCommandBufferKHR.
    createCommandBuffer @55 :CreateCommandBuffer;
    recordCommand @56 :RecordCommand;
    enqueueCommandBuffer @57 :EnqueueCommandBuffer;
    # cl_khr_command_buffer_mutable_dispatch: a recorded launch's arguments or sizes change for the
    # replays that follow.
    updateCommand @58 :UpdateCommand;

    # Report an unwatched command's completion (Command.unwatched) in a Completion, like any other:
    # queued before this request's reply (if it has one) when the command has completed, else when
    # it does. The client asks once the application waits for the event or asks about it.
    watchEvent @59 :WatchEvent;

    # A local session's shared memory (struct SharedMemory): its descriptor is passed beside this
    # request's frame. No reply (seq 0) unless it fails; once per session.
    sharedMemory @62 :SharedMemory;
  }
  # Set: this request's payload is in the session's shared memory, not after its frame (whose
  # payloadBytes is then 0); the daemon marks the slot free once done with it.
  sharedPayload @60 :SharedSpan;
  # Set: the reply's payload goes to the session's shared memory where the daemon can put it there
  # (Reply.sharedPayload says so); the client marks the slot free once it has the bytes.
  sharedReply @61 :SharedSpan;

  struct CreateContext {
    id @0 :UInt64;
    devices @1 :List(UInt64);
  }
  struct CreateQueue {
    id @0 :UInt64;
    context @1 :UInt64;
    device @2 :UInt64;
    properties @3 :UInt64;        # cl_command_queue_properties bits
  }
  struct CreateBuffer {
    id @0 :UInt64;
    context @1 :UInt64;
    flags @2 :UInt64;             # host-pointer flags already resolved by the client
    size @3 :UInt64;
    initialContents @4 :Bool;     # the payload holds size bytes to copy in
  }
  struct CreateSubBuffer {
    id @0 :UInt64;
    parent @1 :UInt64;
    flags @2 :UInt64;
    origin @3 :UInt64;
    size @4 :UInt64;
  }
  struct CreateProgramWithSource {
    id @0 :UInt64;
    context @1 :UInt64;
    source @2 :Text;
    headers @3 :List(IncludeFile);  # what source includes by absolute name, paths absolute: the
                                    # daemon writes them into its worker's folder, and the lines
                                    # that name them name its copies (runtime/build_includes.h)
  }
  struct BuildProgram {
    program @0 :UInt64;
    devices @1 :List(UInt64);     # empty: every device of the program's context on this daemon
    options @2 :Text;
    includes @3 :List(IncludeFolder);  # the application's -I folders (out of options), each a -I here
  }
  struct CreateKernel {
    id @0 :UInt64;
    program @1 :UInt64;
    name @2 :Text;
  }
  struct CreateUserEvent {
    id @0 :UInt64;
    context @1 :UInt64;
    signalledBy @2 :UInt64;       # a stand-in for an event of that peer daemon (instance), which sets
                                  # it with a PeerSignal; it fails if the link to that peer is lost.
                                  # 0: an application's user event or a stand-in the client sets
    data @3 :SignalData;          # with signalledBy: the signal carries these bytes (SignalPeer.data),
                                  # which a write puts in the range behind the stand-in: data.event
                                  # completes once they are on the device. size 0: none
  }
  struct SetUserEventStatus {
    event @0 :UInt64;
    status @1 :Int32;
  }
  struct WriteBuffer {
    command @0 :Command;
    buffer @1 :UInt64;
    offset @2 :UInt64;
    size @3 :UInt64;
  }
  struct ReadBuffer {
    command @0 :Command;
    buffer @1 :UInt64;
    offset @2 :UInt64;
    size @3 :UInt64;
  }
  struct CopyBuffer {
    command @0 :Command;
    src @1 :UInt64;
    dst @2 :UInt64;
    srcOffset @3 :UInt64;
    dstOffset @4 :UInt64;
    size @5 :UInt64;
  }
  struct FillBuffer {
    command @0 :Command;
    buffer @1 :UInt64;
    pattern @2 :Data;
    offset @3 :UInt64;
    size @4 :UInt64;
  }
  struct NDRange {
    command @0 :Command;
    kernel @1 :UInt64;
    args @2 :List(KernelArg);     # the arguments set since this kernel last ran on this daemon
    offset @3 :List(UInt64);      # empty, or workDim values
    global @4 :List(UInt64);      # workDim values
    local @5 :List(UInt64);       # empty: the implementation chooses
  }
  struct GetInfo {
    object @0 :UInt64;
    kind @1 :InfoKind;
    param @2 :UInt32;
    device @3 :UInt64;            # for per-device queries (build and work-group info)
    argIndex @4 :UInt32;          # for kernelArg
    input @5 :Data;               # for queries that take an input value (sub-group info)
  }

  struct ImageFormat {
    channelOrder @0 :UInt32;
    channelType @1 :UInt32;
  }
  struct ImageDesc {
    type @0 :UInt32;              # CL_MEM_OBJECT_IMAGE*
    width @1 :UInt64;
    height @2 :UInt64;
    depth @3 :UInt64;
    arraySize @4 :UInt64;
    rowPitch @5 :UInt64;          # 0 unless the image wraps a buffer (image1d_buffer, image2d from buffer)
    slicePitch @6 :UInt64;
    numMipLevels @7 :UInt32;
    numSamples @8 :UInt32;
    buffer @9 :UInt64;            # the buffer or image the image is made from, or 0
  }
  struct CreateImage {
    id @0 :UInt64;
    context @1 :UInt64;
    flags @2 :UInt64;
    format @3 :ImageFormat;
    desc @4 :ImageDesc;
    initialContents @5 :Bool;
  }
  struct CreateSampler {
    id @0 :UInt64;
    context @1 :UInt64;
    properties @2 :List(UInt64);  # cl_sampler_properties, without the terminating 0
  }
  struct GetSupportedImageFormats {
    context @0 :UInt64;
    flags @1 :UInt64;
    type @2 :UInt32;
  }
  struct ReadImage {
    command @0 :Command;
    image @1 :UInt64;
    origin @2 :List(UInt64);
    region @3 :List(UInt64);
  }
  struct WriteImage {
    command @0 :Command;
    image @1 :UInt64;
    origin @2 :List(UInt64);
    region @3 :List(UInt64);
  }
  struct CopyImage {
    command @0 :Command;
    src @1 :UInt64;
    dst @2 :UInt64;
    srcOrigin @3 :List(UInt64);
    dstOrigin @4 :List(UInt64);
    region @5 :List(UInt64);
  }
  struct FillImage {
    command @0 :Command;
    image @1 :UInt64;
    color @2 :Data;               # 16 bytes: float4, int4 or uint4 by the image's channel type
    origin @3 :List(UInt64);
    region @4 :List(UInt64);
  }
  struct CopyImageToBuffer {
    command @0 :Command;
    src @1 :UInt64;
    dst @2 :UInt64;
    srcOrigin @3 :List(UInt64);
    region @4 :List(UInt64);
    dstOffset @5 :UInt64;
  }
  struct CopyBufferToImage {
    command @0 :Command;
    src @1 :UInt64;
    dst @2 :UInt64;
    srcOffset @3 :UInt64;
    dstOrigin @4 :List(UInt64);
    region @5 :List(UInt64);
  }
  struct ReadBufferRect {
    command @0 :Command;
    buffer @1 :UInt64;
    bufferOrigin @2 :List(UInt64);
    region @3 :List(UInt64);
    bufferRowPitch @4 :UInt64;
    bufferSlicePitch @5 :UInt64;
  }
  struct WriteBufferRect {
    command @0 :Command;
    buffer @1 :UInt64;
    bufferOrigin @2 :List(UInt64);
    region @3 :List(UInt64);
    bufferRowPitch @4 :UInt64;
    bufferSlicePitch @5 :UInt64;
  }
  struct CopyBufferRect {
    command @0 :Command;
    src @1 :UInt64;
    dst @2 :UInt64;
    srcOrigin @3 :List(UInt64);
    dstOrigin @4 :List(UInt64);
    region @5 :List(UInt64);
    srcRowPitch @6 :UInt64;
    srcSlicePitch @7 :UInt64;
    dstRowPitch @8 :UInt64;
    dstSlicePitch @9 :UInt64;
  }
  struct CreateProgramWithBinary {
    id @0 :UInt64;
    context @1 :UInt64;
    devices @2 :List(UInt64);
    binaries @3 :List(Data);      # one per device
  }
  struct CreateProgramWithIL {
    id @0 :UInt64;
    context @1 :UInt64;
    il @2 :Data;
  }
  struct CreateProgramWithBuiltInKernels {
    id @0 :UInt64;
    context @1 :UInt64;
    devices @2 :List(UInt64);
    names @3 :Text;               # semicolon-separated, as in the API
  }
  struct CompileProgram {
    program @0 :UInt64;
    devices @1 :List(UInt64);
    options @2 :Text;
    headers @3 :List(Header);
    includes @4 :List(IncludeFolder);  # as BuildProgram's
    struct Header {
      name @0 :Text;              # include name
      program @1 :UInt64;         # the program holding the header's source
    }
  }
  struct LinkProgram {
    id @0 :UInt64;                # the new program
    context @1 :UInt64;
    devices @2 :List(UInt64);
    options @3 :Text;
    inputs @4 :List(UInt64);
  }
  struct SetSpecializationConstant {
    program @0 :UInt64;
    specId @1 :UInt32;
    value @2 :Data;
  }
  struct SendToPeer {
    # A command: reads the memory object's bytes (chunked, pipelined) once the wait list is complete
    # and sends them to the peer session, where a ReceiveFromPeer of the same transfer takes them.
    # Its event completes when every byte has left; on failure the peer's receive fails too. A peer
    # of instance 0 is this session's client: the chunks travel in Notices (Notice.transfer). A peer
    # that is this very session (two devices of one daemon in a collective) gets them in-process.
    command @0 :Command;
    memObject @1 :UInt64;         # a buffer (offset and size apply) or an image (whole, one chunk)
    offset @2 :UInt64;
    size @3 :UInt64;
    peer @4 :PeerRef;
    transfer @5 :UInt64;          # chosen by the client, unique in the client
    destinationLater @6 :Bool;    # peer is ignored: a TransferTo names it; the chunks are read
                                  # when the command may run and wait for it
  }
  struct ReceiveFromPeer {
    # A command: writes what the peer sends for this transfer into the memory object. Its event
    # completes when every byte has landed on the device; commands that need the data wait for it.
    command @0 :Command;
    memObject @1 :UInt64;
    offset @2 :UInt64;
    size @3 :UInt64;
    sender @4 :UInt64;            # the sending daemon's instance: losing it fails the receive;
                                  # 0: this session's client sends the bytes (TransferData); this
                                  # daemon's own: a SendToPeer of this session to itself
    transfer @5 :UInt64;
    combine @6 :Combine;          # none: the bytes replace the range; else each element of the range
                                  # becomes op(element, the one received): the collectives' reductions,
                                  # on fedcld's CPU as the chunks arrive
    elementType @7 :ElementType;  # of the elements combined (size and offset are whole elements)
  }
  enum Combine {
    none @0;
    sum @1;
    min @2;
    max @3;
    product @4;
  }
  enum ElementType {
    int32 @0;
    int64 @1;
    float32 @2;
    float64 @3;
  }
  struct TransferData {
    transfer @0 :UInt64;
    offset @1 :UInt64;            # where the payload goes, from the transfer's offset; the client
                                  # cuts chunks as the daemons do (protocol/transfer_chunks.h)
  }
  struct NodeFile {
    # A command: copies size bytes between the buffer at offset and the file at fileOffset, in
    # chunks, file I/O on the daemon's thread pool. The path is relative to the session's user's
    # folder under the daemon's file root; an absolute path, "..", or a symbolic link is refused.
    command @0 :Command;
    buffer @1 :UInt64;
    offset @2 :UInt64;
    size @3 :UInt64;
    path @4 :Text;
    fileOffset @5 :UInt64;
    toFile @6 :Bool;              # true: buffer -> file (created, or written in that range only)
  }
  struct TransferTo {
    transfer @0 :UInt64;          # a SendToPeer of this session with destinationLater
    peer @1 :PeerRef;             # instance 0: this session's client (Notice.transfer)
    peerTransfer @2 :UInt64;      # the receive's transfer in the peer session (the peer's client
                                  # chose it); 0: the same as transfer
  }
  struct TransferFrom {
    transfer @0 :UInt64;          # a ReceiveFromPeer of this session
    sender @1 :UInt64;            # the daemon instance whose bytes it takes from now on
  }
  struct TransferAbort {
    transfer @0 :UInt64;
    status @1 :Int32;
    message @2 :Text;
  }
  struct WatchEvent {
    queue @0 :UInt64;             # the command's queue
    event @1 :UInt64;
  }
  struct SignalPeer {
    # When the event completes (or fails), set the stand-in user event of the same id in the peer
    # session (CreateUserEvent.signalledBy).
    event @0 :UInt64;
    peer @1 :PeerRef;
    data @2 :SignalData;          # a range to read after the event and send in the same message (the
                                  # PeerSignal's payload), where the stand-in's data lands it. size 0: none
  }
  struct SignalData {
    # A range of a buffer that travels with a signal: read on the signalling daemon, written on the
    # signalled one, each a command (its queue, event and wait list: at least the signal's event).
    command @0 :Command;
    memObject @1 :UInt64;         # a buffer (not an image)
    offset @2 :UInt64;
    size @3 :UInt64;              # at most signalDataMaxBytes; 0: no data
  }
  struct CreateSubDevices {
    device @0 :UInt64;
    properties @1 :List(Int64);   # cl_device_partition_property, without the terminating 0
    firstId @2 :UInt64;           # the new sub-devices get firstId, firstId + 1, ...
    maxDevices @3 :UInt32;        # how many ids the client reserved; 0: only count, create nothing
  }
  struct CreateCommandBuffer {
    id @0 :UInt64;
    queue @1 :UInt64;             # the queue it was created for: its device and context
  }
  struct RecordCommand {
    # Appends a command; its sync point is its position in the buffer, from 1.
    commandBuffer @0 :UInt64;
    waitFor @1 :List(UInt32);     # sync points of commands recorded before it
    # The command as it would be enqueued, its Command left empty: copyBuffer, copyBufferRect,
    # fillBuffer, copyImage, fillImage, copyImageToBuffer, copyBufferToImage, barrier, or ndRange
    # with every argument (not only those changed): a recorded launch keeps the arguments it was
    # recorded with, whatever the kernel is given later.
    command @2 :Request;
  }
  struct EnqueueCommandBuffer {
    command @0 :Command;          # the queue it runs on, its event and wait list
    commandBuffer @1 :UInt64;
  }
  struct UpdateCommand {
    commandBuffer @0 :UInt64;
    syncPoint @1 :UInt32;         # the launch's, as RecordCommand numbers them
    args @2 :List(KernelArg);     # the arguments that change
    offset @3 :List(UInt64);      # empty: unchanged; else workDim values
    global @4 :List(UInt64);
    local @5 :List(UInt64);
  }
}

enum InfoKind {
  program @0;
  programBuild @1;
  kernel @2;
  kernelWorkGroup @3;
  kernelArg @4;
  mem @5;
  queue @6;
  context @7;
  image @8;
  sampler @9;
  kernelSubGroup @10;
}

# ---------------------------------------------------------------------------------------------------
# Replies and notices

struct KernelDesc {
  name @0 :Text;
  args @1 :List(ArgDesc);         # metadata for the client's checks, from the binary or a twin build if need be
  argInfoAvailable @2 :Bool;      # the backend answers clGetKernelArgInfo for this kernel
  compileWorkGroupSize @3 :List(UInt64);
                                  # CL_KERNEL_COMPILE_WORK_GROUP_SIZE (reqd_work_group_size), three
                                  # values, 0,0,0 without the attribute; the client refuses launches
                                  # that contradict it. The kernel list is per program while the query
                                  # is per device: the attribute is in the source, so it is the same on
                                  # every device unless the source picks it with a per-device macro;
                                  # fedcld reports the first device of the build that answers.

  struct ArgDesc {
    addressQualifier @0 :UInt32;  # CL_KERNEL_ARG_ADDRESS_*; 0 when the backend does not say
    accessQualifier @1 :UInt32;
    typeName @2 :Text;
    typeQualifier @3 :UInt64;
    name @4 :Text;
    valueSize @5 :UInt64;         # bytes of a by-value argument where the program's binary declares
                                  # them (NVIDIA's PTX) and typeName is empty; 0: from typeName
  }
}

struct BuildResult {
  devices @0 :List(DeviceBuild);
  kernels @1 :List(KernelDesc);   # every kernel of the program, after a successful build

  struct DeviceBuild {
    device @0 :UInt64;
    status @1 :Int32;             # cl_build_status
    log @2 :Text;
    binaryType @3 :UInt32;        # cl_program_binary_type
    options @4 :Text;             # CL_PROGRAM_BUILD_OPTIONS as the backend answers it
  }
}

struct Reply {
  seq @0 :UInt64;
  status @1 :Int32;               # CL_SUCCESS or the error code
  message @2 :Text;               # what went wrong, for a person
  union {
    none @3 :Void;
    hello @4 :HelloReply;
    info @5 :Data;
    build @6 :BuildResult;
    read @7 :Completion;          # the frame's payload holds the bytes read; this completes the
                                  # read's event (no separate Completion is sent for it)
    subDevices @8 :List(DeviceDesc);
    daemonStatus @9 :DaemonStatus;
    challenge @10 :AuthChallenge; # to Hello or StatusRequest, from a daemon that has a key: answer
                                  # with authenticate
    resumed @11 :Resumed;         # to resume (or its authenticate): the session goes on
    finished @12 :List(Completion);
                                  # to finish: the queue's unwatched commands before it that failed
                                  # (Command.unwatched; not those reported already); the others
                                  # completed
    local @14 :LocalRedirect;     # to Hello (with Hello.host) from a daemon of the client's host
  }
  sharedPayload @13 :Bool;        # the payload is in the slot the request named (Request.sharedReply)
}

struct Completion {
  event @0 :UInt64;
  status @1 :Int32;               # CL_COMPLETE, or the negative execution status
  profiling @2 :List(UInt64);     # queued, submit, start, end (empty if the queue does not profile)
}

struct AsyncError {
  object @0 :UInt64;              # the queue or object the failed request named
  event @1 :UInt64;               # the failed command's event, or 0
  status @2 :Int32;
  message @3 :Text;
  context @4 :UInt64;             # the context of that object, when known, for its notify callback
}

struct Notice {
  # An empty Notice is a heartbeat: fedcld sends one to a client session that heard nothing from it
  # for half a second, so that the client can tell a frozen daemon from a quiet one.
  completions @0 :List(Completion);
  errors @1 :List(AsyncError);
  printfBytes @2 :UInt64;         # kernel printf output: the frame's payload holds this many bytes
                                  # that the session's printing commands wrote to fedcld's stdout
                                  # (the backend's own formatting, untouched). The client writes them
                                  # to the application's stdout, and flushes it, before it processes
                                  # this notice's completions. 0: no payload.
  transfer @3 :Request.TransferData;
                                  # set: the payload is a chunk of a SendToPeer whose peer is this
                                  # session's client (peer.instance 0: a file the client writes,
                                  # clEnqueueReadBufferToStdioFile); printfBytes is then 0
  received @4 :UInt64;            # bytes of the session's stream the daemon has received: the client
                                  # may drop what it kept for resending up to there (0: nothing said)
}

# ---------------------------------------------------------------------------------------------------
# Daemon to daemon

struct PeerMessage {
  union {
    hello @0 :PeerHello;          # first message of the daemon that dialled
    welcome @1 :PeerWelcome;      # the answer; a status other than CL_SUCCESS closes the link
    data @2 :PeerData;            # payload: the bytes
    abort @3 :PeerAbort;
    signal @4 :PeerSignal;
    heartbeat @5 :Void;           # sent on a link idle for a second: silence means a dead peer
    challenge @6 :AuthChallenge;  # to hello, from a daemon that has a key
    proof @7 :AuthProof;          # the dialling daemon's answer to challenge; welcome follows
    credit @8 :PeerCredit;        # from the receiving session: how far the sender may go
    sharedMemory @9 :SharedMemory;
                                  # on a link over a local socket, each side's first message after
                                  # the handshake: the memory its data frames' payloads may lie in
                                  # (struct SharedMemory; the descriptor is passed beside the frame)
  }
}

struct PeerHello {
  protocolVersion @0 :UInt32;
  key @1 :Text;                   # obsolete, never set: daemons prove the cluster key (AuthChallenge)
  instance @2 :UInt64;            # the dialling daemon
  expect @3 :UInt64;              # the instance it means to reach
  nonce @4 :Data;                 # the dialling daemon's fresh nonce
  session @5 :UInt64;             # the session there the link is for (its token)
  fromSession @6 :UInt64;         # the dialling daemon's session at this end (its token)
}

struct PeerWelcome {
  instance @0 :UInt64;
  status @1 :Int32;
  message @2 :Text;
  proof @3 :Data;                 # the answering daemon's proof that it holds the key
}

struct PeerData {
  session @0 :UInt64;             # the receiving session's token
  transfer @1 :UInt64;
  offset @2 :UInt64;              # where the payload goes, from the transfer's offset
  from @3 :UInt64;                # the sending session's token (where PeerCredits go)
  shared @4 :SharedSpan;          # set: the payload is in the sender's shared memory (the frame has
                                  # none); the receiver frees the slot once it has the bytes
}

struct PeerCredit {
  # Flow control of one transfer: the sender puts a chunk on the link only while the chunk starts
  # below `limit` (peerInitialAllowance until the first credit). The receiving session grants up to
  # fedcld --peer-ahead bytes past what it has taken into place, so that a device that takes the
  # bytes slower than the link brings them leaves a bounded amount waiting in the receiver's memory;
  # a sender that goes further fails the transfer. Sent for transfers larger than the allowance.
  session @0 :UInt64;             # the sending session's token (PeerData.from)
  transfer @1 :UInt64;            # as the data frames name it
  receiver @2 :UInt64;            # the receiving session's token (PeerData.session)
  limit @3 :UInt64;               # bytes from the transfer's start
}

struct PeerAbort {
  session @0 :UInt64;
  transfer @1 :UInt64;
  status @2 :Int32;
  message @3 :Text;
}

struct PeerSignal {
  session @0 :UInt64;
  event @1 :UInt64;
  status @2 :Int32;               # CL_COMPLETE or the event's negative status
  # The frame's payload: the bytes of SignalPeer.data (CL_COMPLETE only), or none.
}

# ---------------------------------------------------------------------------------------------------
# Operations (`fedcl status`)

struct StatusRequest {
  protocolVersion @0 :UInt32;
  key @1 :Text;           # obsolete, never set: as in Hello, a daemon with a key takes only a proof
  user @2 :Text;          # as in Hello: whose key the client proves; may be empty
  nonce @3 :Data;         # as in Hello: the client's fresh nonce for the challenge-response
  daemon @4 :Text;        # as in Hello
}

struct DaemonStatus {
  protocolVersion @0 :UInt32;
  node @1 :Text;
  instance @2 :UInt64;
  uptimeSeconds @3 :UInt64;
  platforms @4 :List(PlatformSummary);
  sessionsShown @5 :Bool;         # false: this daemon keeps its sessions to itself (fedcld --status-sessions no)
  sessions @6 :List(SessionSummary);  # client sessions; empty unless sessionsShown
  maxSessions @7 :UInt64;
  maxSessionMemory @8 :UInt64;    # bytes one session may allocate; 0: no limit
  proof @9 :Data;                 # as HelloReply.proof: the daemon holds the key; empty without one
  version @10 :Text;              # fedcld's release ("0.1.0")
  sessionsHidden @11 :UInt64;     # sessions open but not listed: other users' (visibility rules:
                                  # docs/status.md)
  sessionsStarted @12 :UInt64;    # since the daemon started
  handshakesRefused @13 :UInt64;  # clients and peers turned away (key, protocol, TLS, capacity)
  requestsFailed @14 :UInt64;     # client requests and commands that ended in an error, every session
  workerFailures @15 :UInt64;     # session workers that crashed or were ended for standing still
  admin @16 :Bool;                # the asker sees every session (no keys, the cluster key, the admin)

  struct PlatformSummary {
    name @0 :Text;
    devices @1 :List(DeviceSummary);
  }
  struct DeviceSummary {
    name @0 :Text;
    globalMemory @1 :UInt64;      # CL_DEVICE_GLOBAL_MEM_SIZE
  }
  struct SessionSummary {
    client @0 :Text;              # Hello.client: "host:pid"
    platform @1 :UInt32;
    memoryBytes @2 :UInt64;       # buffers and images it holds
    objects @3 :UInt64;
    seconds @4 :UInt64;           # how long it has been open
    pid @5 :UInt32;               # the worker process that runs it
    user @6 :Text;                # whose key the client proved; empty on a daemon without keys
    address @7 :Text;             # the client's connection as the daemon sees it ("host:port")
    commandsInFlight @8 :UInt64;  # commands handed to the backend whose completion is not seen yet
    requests @9 :UInt64;          # requests executed (every kind)
    requestsFailed @10 :UInt64;
    bytesReceived @11 :UInt64;    # from the client
    bytesSent @12 :UInt64;        # to the client
    links @13 :List(LinkSummary); # its peer links: this session's data to and from other daemons
    transport @14 :Text;          # "tcp", "tls", "local" (a Unix socket) or "local+shm" (and shared
                                  # memory for its bulk bytes)
  }
  struct LinkSummary {
    peer @0 :Text;                # the other daemon, as dialled ("host:port")
    up @1 :Bool;                  # false: the link closed (it stays listed with its traffic)
    bytesSent @2 :UInt64;
    bytesReceived @3 :UInt64;
    transport @4 :Text;           # as SessionSummary.transport
  }
}

# ---------------------------------------------------------------------------------------------------
# Inside fedcld: the main process and its session workers (docs/design-decisions.md, "Processes")
#
# fedcld's main process listens, does the TLS handshake and the challenge-response, and never calls
# the backend. Every client session runs in a worker process of its own, which loads the backend.
# They talk over a Unix socket (a libuv IPC pipe) in frames of kind worker; a message that hands a
# connection over has the connection's socket passed beside it (SCM_RIGHTS). After the hand-over the
# worker talks to the client, or to the peer, directly.

struct WorkerMessage {
  union {
    setup @0 :WorkerSetup;            # main to worker, first: what the worker needs of the options
    ready @1 :WorkerReady;            # worker to main: the backend is loaded, a session may come
    takeSession @2 :TakeSession;      # main to worker: a client's new session
    resumeSession @3 :ResumeSession;  # main to worker: a new connection resumes the worker's session
    takeLink @4 :TakeLink;            # main to worker: a peer link to the worker's session
    dial @5 :WorkerDial;              # worker to main: link the session to a session of another daemon
    dialFailed @6 :WorkerDialFailed;  # main to worker: that link could not be made
  }
}

# A worker's requests for node files, on a socket of their own beside the channel (SOCK_SEQPACKET,
# one message a packet): a confined worker opens nothing under --file-root itself; the main process
# opens the file beneath the folder of the worker's session's user (node_file_broker.h).
struct NodeFileOpen {
  path @0 :Text;                    # relative to the user's folder (Request.nodeFile.path)
  forWriting @1 :Bool;              # a save: opened as it is, or created 0600
}
struct NodeFileOpened {
  error @0 :Text;                   # "": the file's descriptor is beside this message
}

# A -I folder of the application's, with the headers the program's source includes from it (the
# client reads them: runtime/build_includes.h); the daemon writes them into its worker's folder.
struct IncludeFolder {
  files @0 :List(IncludeFile);
}
struct IncludeFile {
  path @0 :Text;                    # relative, as an #include names it, no ".."; absolute in headers
  contents @1 :Data;
}

struct WorkerSetup {
  # The options a worker uses: never a key, a key list or TLS's private key, which stay in the
  # main process.
  logLevel @0 :UInt8;
  node @1 :Text;
  instance @2 :UInt64;              # the daemon's (HelloReply.instance)
  platform @3 :Text;                # --platform, --devices: which backend devices are served
  devices @4 :List(UInt32);
  kernelNameGuard @5 :Int64;        # --kernel-name-guard; -1: by vendor
  maxSessionMemory @6 :UInt64;
  completion @7 :UInt8;             # CompletionMode
  peerTimeoutMs @8 :UInt64;
  resumeWindowMs @9 :UInt32;
  scratch @10 :Text;                # the worker's own folder: its temporary files and JIT caches
  busyPollUs @11 :Int64;
  pageLockedReads @12 :UInt8;       # PageLockedReads
  peerAddress @13 :Text;
  enumerateOnly @14 :Bool;          # describe the platforms in Ready, then exit
  traceFile @15 :Text;              # --trace: the worker writes its marks to this path + "." + session
  openFiles @16 :UInt64;            # --session-open-files: the worker's RLIMIT_NOFILE; 0: as inherited
  stageBufferRanges @17 :Int8;      # --stage-buffer-ranges: 1 yes, 0 no, -1 by vendor
  transferWindow @18 :Int64;        # --transfer-window: bytes, 0 no window, -1 by vendor
  writeBufferContents @19 :Int8;    # --write-buffer-contents: 1 yes, 0 no, -1 by vendor
  peerAhead @20 :UInt64;            # --peer-ahead: bytes a peer's send may run ahead of a receive
  sandbox @21 :Bool;                # --sandbox: confine the worker (worker_sandbox.h)
  account @22 :Account;             # --session-accounts: whose the worker is, before it loads the backend
  host @23 :Data;                   # this host (protocol/host_identity.h), for HelloReply.host
  localSocket @24 :Text;            # --local-socket as bound, for HelloReply.localSocket
}

struct Account {
  # A local account a worker runs as (a fresh worker per session, started for it): no account is root.
  uid @0 :UInt32;                   # 0: none, the worker stays as fedcld's own user
  gid @1 :UInt32;
  groups @2 :List(UInt32);          # its supplementary groups
  name @3 :Text;
}

struct WorkerReady {
  platforms @0 :List(PlatformDesc); # the backend platforms served (device ids 1..N, as in HelloReply)
  problem @1 :Text;                 # not empty: the backend could not be loaded, and why
}

struct HandedConnection {
  # A connection as the main process leaves it. Its socket travels beside the message.
  peer @0 :Text;                    # host:port of the other end, for the log
  tls @1 :TlsState;                 # only with TLS
  plaintext @2 :Data;               # bytes of the stream read but not used yet
  streamReceived @3 :UInt64;        # bytes of the session's stream read and used before the hand-over
  streamSent @4 :UInt64;            # bytes of the session's stream written before it
}

struct TlsState {
  # fedcl's TLS record layer (protocol/tls_records.h) between two records: both traffic secrets and
  # record numbers, and what was read of the next record.
  sendSecret @0 :Data;
  sendSeq @1 :UInt64;
  receiveSecret @2 :Data;
  receiveSeq @3 :UInt64;
  updateAsked @4 :Bool;             # the peer asked for a key update that is not sent yet
  ciphertext @5 :Data;              # records read but not opened yet
}

struct TakeSession {
  connection @0 :HandedConnection;
  seq @1 :UInt64;                   # the request the HelloReply answers
  client @2 :Text;                  # Hello.client
  user @3 :Text;                    # whose key the client proved
  platform @4 :UInt32;
  proof @5 :Data;                   # the daemon's proof for the HelloReply; empty without a key
  sessionToken @6 :UInt64;          # HelloReply.sessionToken, chosen by the main process
  resumeToken @7 :Data;             # HelloReply.resumeToken; empty: no resumption
  number @8 :UInt64;                # the session's number in the daemon's log
  peerAddress @9 :Text;             # HelloReply.peerAddress and its tag, made by the main process,
  peerAddressTag @10 :Data;         # which holds the key
  localSocketTag @11 :Data;         # HelloReply.localSocketTag, made there too
}

struct ResumeSession {
  connection @0 :HandedConnection;
  seq @1 :UInt64;
  received @2 :UInt64;              # Resume.received: how much of the stream the client has
  proof @3 :Data;                   # the daemon's proof for Resumed; empty without a key
}

struct TakeLink {
  connection @0 :HandedConnection;
  peerInstance @1 :UInt64;          # the other daemon
  peerSession @2 :UInt64;           # the session there (its token)
  dial @3 :UInt64;                  # the WorkerDial this answers; 0: the other daemon dialled
}

struct WorkerDial {
  id @0 :UInt64;                    # chosen by the worker, never 0
  peer @1 :PeerRef;
}

struct WorkerDialFailed {
  id @0 :UInt64;
  message @1 :Text;
}
