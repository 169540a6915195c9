#!/usr/bin/perl
# fake_phalanxd.pl SOCKET accept|hang: a stand-in for phalanxd's Unix socket in the Slurm tests
# (perl-base only: Socket and Fcntl are in every Debian).
#   accept: accepts every connection, reads its one line (a report), answers "ok", prints
#           "accepted" for each, closes it
#   hang:   listens with a full backlog and never accepts (a hung phalanxd)
# Prints "ready" once the socket exists.
use strict;
use warnings;
use Socket;
use Fcntl;

my ($path, $mode) = @ARGV;
die "usage: fake_phalanxd.pl SOCKET accept|hang\n" unless defined $mode && $mode =~ /^(accept|hang)$/;
$| = 1;
unlink $path;
socket(my $listener, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
bind($listener, pack_sockaddr_un($path)) or die "bind $path: $!";
chmod 0777, $path;
listen($listener, $mode eq 'hang' ? 0 : 64) or die "listen: $!";
if ($mode eq 'hang') {
  my @held;
  for (1 .. 8) {
    socket(my $c, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
    fcntl($c, F_SETFL, fcntl($c, F_GETFL, 0) | O_NONBLOCK) or die "fcntl: $!";
    connect($c, pack_sockaddr_un($path));
    push @held, $c;
  }
  print "ready\n";
  sleep 1 while 1;
}
print "ready\n";
while (accept(my $c, $listener)) {
  my $line = <$c>;
  if (defined $line && $line =~ /^MUNGE:/) {
    syswrite($c, "ok\n");
    print "accepted\n";
  }
  close $c;
}
